"""Startup time: process start to the console's first painted frame, and to `--version`.

Prints the median (and min/max) over N runs. Run: python tests/perf/startup.py [--runs 10]
The console is started headless on the demo-free local profile through Textual's
`run_test`, in a fresh interpreter each run, so imports are counted.

`--baseline DIR` (another checkout, e.g. `git archive main | tar -x -C DIR`) times
that tree's console too, alternating run by run, so a busy machine's load falls on
both alike.

Python's bytecode cache matters, so the first frame is timed both ways:
- bytecode cached: servedeck's modules load from __pycache__, as they do for an
  installed tool after its first start (a warm-up run writes the cache);
- compiled from source: a copy of the tree (git archive HEAD) with
  PYTHONDONTWRITEBYTECODE=1, so every servedeck module is compiled at each start,
  as in a checkout run under that setting. Libraries load from their caches in both.

"First frame" is when the console's first full layout is drawn: the moment
Textual hands its first compositor update to the terminal (stamped after
turning it into terminal codes, which a headless run skips). "Sources started"
is the first after-refresh callback, once the console has started its sources
(the recorder, NVML, httpx: ~100-150 ms, deliberately after the first frame);
earlier figures in notes timed that second moment.

Measured on a quiet 2-core machine (10 runs each, medians): first frame 366 ms
bytecode cached (352-374), 455 ms from source (440-468); sources started 517 ms
cached, 637 ms from source; `--version` 78 ms. Where the cached first frame goes
(`python -X importtime` and perf_counter around the imports): interpreter 20 ms,
Textual's imports ~142 ms, servedeck's modules ~112 ms, building the console and
its first layout ~90 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FIRST_FRAME = r"""
import asyncio, sys, time
started = float(sys.argv[1])
from tui.app import ServedeckApp
from tui.core.config import Profile
from tui.compose import open_deck
from textual._compositor import CompositorUpdate

async def main():
    profile = Profile(name="local")
    app = ServedeckApp(profile, open_deck(profile))
    first_frame = []
    display = app._display

    def stamp_first_frame(screen, renderable):
        display(screen, renderable)
        if first_frame or not isinstance(renderable, CompositorUpdate) or app._batch_count:
            return
        renderable.render_segments(app.console)  # the terminal codes a real terminal gets
        first_frame.append(time.time())

    app._display = stamp_first_frame
    settled = asyncio.get_running_loop().create_future()
    async with app.run_test(size=(120, 36)) as pilot:
        app.call_after_refresh(lambda: settled.done() or settled.set_result(time.time()))
        stamp = await settled
        print(first_frame[0] - started, stamp - started)
        await pilot.press("q")

asyncio.run(main())
"""


def first_frame_s(tree: Path = REPO, bytecode: bool = True) -> tuple[float, float]:
    """(first frame drawn, sources started) in seconds from process start."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.time()
    result = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME, repr(started)],
        cwd=tree,
        capture_output=True,
        text=True,
        env=env,
    )
    if result.returncode != 0:  # say why, not only that it failed
        sys.exit(f"startup: the console in {tree} failed:\n{result.stderr[-3000:]}")
    first, settled = result.stdout.strip().splitlines()[-1].split()
    return float(first), float(settled)


def version_s(tree: Path = REPO) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tui", "--version"], cwd=tree, capture_output=True, check=True
    )
    return time.perf_counter() - started


def report(name: str, samples: list[float]) -> None:
    print(
        f"{name:<34} median {statistics.median(samples) * 1000:7.1f} ms"
        f"   min {min(samples) * 1000:7.1f} ms   max {max(samples) * 1000:7.1f} ms   (n={len(samples)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline", type=Path, help="another tree, timed in alternation")
    args = parser.parse_args()
    if args.baseline is None:
        report("servedeck --version", [version_s() for _ in range(args.runs)])
        first_frame_s()  # writes the bytecode cache
        cached = [first_frame_s() for _ in range(args.runs)]
        with tempfile.TemporaryDirectory(prefix="servedeck-source-") as copy:
            archive = subprocess.run(
                ["git", "archive", "HEAD"], cwd=REPO, capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", copy], input=archive, check=True)
            source = [first_frame_s(Path(copy), bytecode=False) for _ in range(args.runs)]
        for mode, samples in (("bytecode cached", cached), ("from source", source)):
            report(f"first frame, {mode}", [first for first, _ in samples])
            report(f"sources started, {mode}", [settled for _, settled in samples])
        return
    trees = {"this tree": REPO, "baseline": args.baseline.resolve()}
    frames: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, tree in trees.items():
            frames[name].append(first_frame_s(tree)[0])
    for name, samples in frames.items():
        report(f"first frame, {name}", samples)


if __name__ == "__main__":
    main()
