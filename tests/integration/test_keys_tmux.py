"""Keys in a real terminal at 80x24 (tmux): ctrl+p, focus on the log, `?`, the first-run hint.

Pilot presses keys inside Textual; here the terminal's own bytes for ctrl+p go through
the driver, and the screen is what tmux shows: what an operator over SSH would see.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.e2e_support import Tmux, wait_for

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.tmux
def test_plain_servedeck_hint_palette_log_focus_and_help(tmp_path: Path) -> None:
    tmux = Tmux(width=80, height=24)
    env = {
        "PYTHONPATH": str(REPO),
        **{
            f"SERVEDECK_{name}_DIR": str(tmp_path / name.lower())
            for name in ("CONFIG", "DATA", "LOG")
        },
    }
    try:
        tmux.start(f"{sys.executable} -m tui", env)
        tmux.wait_screen(lambda s: "servedeck demo" in s, 60, "the first-run hint")
        tmux.send("C-p")
        tmux.wait_screen(lambda s: "Search for commands" in s, 20, "the palette on ctrl+p")
        for key in "quick":
            tmux.send(key)
        tmux.wait_screen(lambda s: "Bench preset quick" in s, 20, "the preset found by name")
        tmux.send("Escape")
        tmux.wait_screen(lambda s: "Search for commands" not in s, 20, "the palette closed")
        # No Tab: the log has the focus on the Deck, so f filters it at once.
        tmux.send("f")
        tmux.wait_screen(lambda s: "filter warnings and errors" in s, 20, "the log's filter")
        screen = tmux.screen()
        assert "/ Search" in screen and "f Filter" in screen, screen  # the footer: log keys
        tmux.send("?")
        screen = tmux.wait_screen(lambda s: "Search the log" in s, 20, "the log's keys in help")
        assert "Keys that work here" in screen, screen
        # Escape first, alone: an Escape with q right behind it reads as alt+q.
        tmux.send("Escape")
        tmux.wait_screen(lambda s: "Keys that work here" not in s, 20, "the help closed")
        tmux.send("q")
        wait_for(tmux.pane_dead, 30, "the console to exit on q")
    finally:
        tmux.close()
