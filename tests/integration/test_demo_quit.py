"""`servedeck demo` starts, loads, serves and quits cleanly: through Pilot and in a real tmux.

Both run the real console over a real SimBox (its server, EngineCore and eight
workers are processes on this machine) with a short load; after `q` nothing the
box started may be left running.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.support.e2e_support import (
    E2E_LOAD_S,
    Tmux,
    pids_mentioning,
    started_processes,
    survivors,
    wait_for,
)
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import demo_profile
from tui.serving.load.tracker import LOADING_PHASES, Phase
from widgets.header_bar import HeaderBar
from widgets.load_strip import LoadStrip

REPO = Path(__file__).resolve().parents[2]


async def until(pilot, predicate, timeout_s: float, what: str) -> float:  # type: ignore[no-untyped-def]
    """Poll while the app keeps running (a plain sleep would stall its event loop).

    The limit is wall time (a pause on a busy machine lasts longer than asked); the
    answer is the seconds waited, for the failure message of the next wait.
    """
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        await pilot.pause(0.1)
    return time.monotonic() - started


async def test_demo_console_loads_serves_and_quits_without_leftovers() -> None:
    deck = open_deck(demo_profile(), demo_load_s=E2E_LOAD_S, demo_autostart=True)
    box = deck.box
    assert box is not None
    state_dir = box.state_dir
    app = ServedeckApp(deck.profile, deck)
    started: list[tuple[int, int, str]] = []
    async with app.run_test(size=(120, 36)) as pilot:
        header = app.query_one(HeaderBar)
        assert "SIMULATED" in header.render().plain
        # The load as the console saw it: loading, or already past it. A 5 s load can be
        # over between two polls of a test slowed by three other workers; asking to catch
        # it in the act waited 60 s for a state that had come and gone.
        await until(
            pilot,
            lambda: app.progress is not None and (app.progress.is_loading or app.ready),
            60,
            "the load",
        )
        await until(pilot, lambda: app.ready, 90, "the ready notification")
        # Whether or not a poll caught it loading, the load happened and was followed.
        assert app.progress is not None and any(
            span.phase in LOADING_PHASES for span in app.progress.timeline
        ), app.progress.timeline
        assert app.progress is not None and app.progress.phase == Phase.SERVING
        await until(pilot, lambda: "serving" in str(app.query_one(LoadStrip).render()), 10, "strip")
        started = started_processes(state_dir)
        assert {role for _pid, _ticks, role in started} >= {
            "VLLM::EngineCore",
            *(f"VLLM::Worker_TP{rank}" for rank in range(8)),
        }
        assert pids_mentioning(str(state_dir))  # the server names its state dir while running
        await pilot.press("q")
    assert app.return_code in (0, None)
    wait_for(lambda: not survivors(started, state_dir), 15, "the box's processes to end")
    assert not state_dir.exists(), "the demo's own state dir is removed on quit"


@pytest.mark.tmux
def test_demo_in_a_real_terminal_loads_and_q_quits(tmp_path: Path) -> None:
    tmux = Tmux()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {
        "TMPDIR": str(scratch),  # the demo's box makes its state dir here
        "PYTHONPATH": str(REPO),
        **{
            f"SERVEDECK_{name}_DIR": str(tmp_path / name.lower())
            for name in ("CONFIG", "DATA", "LOG")
        },
    }
    try:
        console_pid = tmux.start(f"{sys.executable} -m tui demo --load-seconds {E2E_LOAD_S:g}", env)
        screen = tmux.wait_screen(lambda s: "SIMULATED" in s, 60, "the SIMULATED header")
        screen = tmux.wait_screen(
            lambda s: "shard " in s and "ready in about" in s and "loading" in s,
            60,
            "the shard bar",
        )
        assert "█" in screen or "░" in screen
        tmux.wait_screen(lambda s: "serving" in s and "ready" in s, 90, "serving and ready")
        (state_dir,) = scratch.glob("servedeck-sim-*")
        started = started_processes(state_dir)
        assert len(started) >= 10, started  # server, EngineCore, 8 workers
        tmux.send("q")
        wait_for(tmux.pane_dead, 30, "the console to exit on q")
        assert not Path(f"/proc/{console_pid}").exists() or "tui" not in (
            Path(f"/proc/{console_pid}/cmdline").read_text(errors="replace")
        )
        wait_for(lambda: not survivors(started, state_dir), 15, "the box's processes to end")
        assert not state_dir.exists()
    finally:
        tmux.close()
