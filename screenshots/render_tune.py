"""Render screenshots/tune.svg and screenshots/tune-handoff.md from one real tune of the simulator.

Runs examples/tune-demo.toml on a fresh simulated box (real processes, real drop-ins,
real capacity searches; about three minutes on two cores) through `servedeck tune`'s
own path (`tune_on_deck`: the attempts and the `tune` event recorded), records the
table it prints, then writes the handoff `servedeck summary` would write for that box
right after the tune, once the restored service serves again (`deck_summary`: the same code path, secrets redacted). The
run's audit and recording live in a temporary data dir, never the user's; the paths
that say where it was made are replaced by placeholders.
Run from the repository root: `python screenshots/render_tune.py`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.text import Text  # noqa: E402

from tui.commands.summary_cmd import deck_summary  # noqa: E402
from tui.core.config import demo_profile  # noqa: E402
from tui.sim.deck import SimDeck, open_sim_deck  # noqa: E402
from tui.tune.preflight import plan_for_deck, plan_lines  # noqa: E402
from tui.tune.results import result_lines  # noqa: E402
from tui.tune.session import tune_on_deck  # noqa: E402
from tui.tune.space import load_space  # noqa: E402

SPACE = ROOT / "examples" / "tune-demo.toml"
OUT = ROOT / "screenshots"


def _scrub(text: str, deck: SimDeck, home: str) -> str:
    """The handoff says nothing about the machine it was made on."""
    text = text.replace(sys.executable, "python").replace(str(deck.box.state_dir), "<state-dir>")
    return text.replace(home, "~/.local/servedeck")


async def tune(home: str) -> tuple[list[str], str]:
    """(the lines `servedeck tune` prints, the handoff written right after it)."""
    space = load_space(SPACE)
    deck = open_sim_deck(demo_profile(), load_s=4.0, autostart=True, wait_ready=True)
    try:
        planned = await plan_for_deck(deck, space)
        outcomes = await tune_on_deck(deck, space, planned, say=lambda line: print(line))
        # the unit is back as it was: serving again once its load is done, then the handoff
        await asyncio.to_thread(deck.box.wait_until_ready, 120.0)
        handoff, missing = await deck_summary(deck)
        for problem in missing:
            print(f"handoff: not collected: {problem}", file=sys.stderr)
        lines = [*plan_lines(planned), "", *result_lines(outcomes, space.objective)]
        return lines, _scrub(handoff, deck, home)
    finally:
        await deck.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as home:  # the run's audit and records: not the user's
        for name in ("CONFIG", "DATA", "LOG"):
            os.environ[f"SERVEDECK_{name}_DIR"] = f"{home}/{name.lower()}"
        lines, handoff = asyncio.run(tune(home))
    width = max(len(line) for line in lines) + 2
    console = Console(record=True, width=width, force_terminal=True, color_system="truecolor")
    console.print(Text("$ servedeck tune --demo --space examples/tune-demo.toml", style="bold"))
    for line in lines:
        console.print(Text(line, style="bold green" if line.startswith("best:") else ""))
    console.save_svg(str(OUT / "tune.svg"), title="servedeck tune")
    (OUT / "tune-handoff.md").write_text(handoff)
    print(OUT / "tune.svg")
    print(OUT / "tune-handoff.md")


if __name__ == "__main__":
    main()
