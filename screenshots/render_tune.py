"""Render screenshots/tune.svg: the result table of a real tune of the simulator.

Runs examples/tune-demo.toml on a fresh simulated box (real processes, real drop-ins,
real capacity searches; about three minutes on two cores) and records the table
`servedeck tune` prints. Run from the repository root: `python screenshots/render_tune.py`.
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

from tui.core.config import demo_profile  # noqa: E402
from tui.sim.deck import open_sim_deck  # noqa: E402
from tui.tune.driver import run_tune  # noqa: E402
from tui.tune.preflight import plan_for_deck, plan_lines  # noqa: E402
from tui.tune.results import result_lines  # noqa: E402
from tui.tune.space import load_space  # noqa: E402

SPACE = ROOT / "examples" / "tune-demo.toml"


async def tune() -> list[str]:
    space = load_space(SPACE)
    deck = open_sim_deck(demo_profile(), load_s=4.0, autostart=True, wait_ready=True)
    try:
        planned = await plan_for_deck(deck, space)
        outcomes = await run_tune(deck, space, planned, say=lambda line: print(line))
        return [*plan_lines(planned), "", *result_lines(outcomes, space.objective)]
    finally:
        await deck.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as home:  # the run's audit and records: not the user's
        os.environ["SERVEDECK_DATA_DIR"] = f"{home}/data"
        os.environ["SERVEDECK_LOG_DIR"] = f"{home}/log"
        lines = asyncio.run(tune())
    width = max(len(line) for line in lines) + 2
    console = Console(record=True, width=width, force_terminal=True, color_system="truecolor")
    console.print(Text("$ servedeck tune --demo --space examples/tune-demo.toml", style="bold"))
    for line in lines:
        console.print(Text(line, style="bold green" if line.startswith("best:") else ""))
    console.save_svg(str(ROOT / "screenshots" / "tune.svg"), title="servedeck tune")


if __name__ == "__main__":
    main()
