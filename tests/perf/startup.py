"""Startup time: process start to the console's first painted frame, and to `--version`.

Prints the median (and min/max) over N runs. Run: python tests/perf/startup.py [--runs 10]
The console is started headless on the demo-free local profile through Textual's
`run_test`, in a fresh interpreter each run, so imports are counted.

`--baseline DIR` (another checkout, e.g. `git archive main | tar -x -C DIR`) times
that tree's console too, alternating run by run, so a busy machine's load falls on
both alike. Python's bytecode cache matters: with PYTHONDONTWRITEBYTECODE=1 every
servedeck module is compiled from source at each start; both modes are worth a look.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FIRST_FRAME = r"""
import asyncio, sys, time
started = float(sys.argv[1])
from tui.app import ServedeckApp
from tui.core.config import Profile
from tui.deck import open_deck

async def main():
    profile = Profile(name="local")
    app = ServedeckApp(profile, open_deck(profile))
    painted = asyncio.get_running_loop().create_future()
    def on_paint():
        if not painted.done():
            painted.set_result(time.time())
    async with app.run_test(size=(120, 36)) as pilot:
        app.call_after_refresh(on_paint)
        stamp = await painted
        print(stamp - started)
        await pilot.press("q")

asyncio.run(main())
"""


def first_frame_s(tree: Path = REPO) -> float:
    started = time.time()
    result = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME, repr(started)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout.strip().splitlines()[-1])


def version_s(tree: Path = REPO) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tui", "--version"], cwd=tree, capture_output=True, check=True
    )
    return time.perf_counter() - started


def report(name: str, samples: list[float]) -> None:
    print(
        f"{name:<28} median {statistics.median(samples) * 1000:7.1f} ms"
        f"   min {min(samples) * 1000:7.1f} ms   max {max(samples) * 1000:7.1f} ms   (n={len(samples)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline", type=Path, help="another tree, timed in alternation")
    args = parser.parse_args()
    if args.baseline is None:
        report("servedeck --version", [version_s() for _ in range(args.runs)])
        report("console first frame", [first_frame_s() for _ in range(args.runs)])
        return
    trees = {"this tree": REPO, "baseline": args.baseline.resolve()}
    frames: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, tree in trees.items():
            frames[name].append(first_frame_s(tree))
    for name, samples in frames.items():
        report(f"first frame, {name}", samples)


if __name__ == "__main__":
    main()
