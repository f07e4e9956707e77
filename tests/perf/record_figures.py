"""Flight-recorder figures: bytes per day, writer CPU, seek time in a week, console CPU on/off.

    python tests/perf/record_figures.py [--console-seconds 60] [--skip-console]

1. Bytes per day for 8 GPUs at 1 s: ten minutes (600 ticks, metrics every 5 s, an
   event a minute) written through the real Recorder thread, extrapolated x144; and
   the same for a downsampled day (one tick per 10 s).
2. Recorder CPU per recorded hour: the process CPU time of those ten minutes, x6.
3. Seek time: a synthetic 7-day file (1 s for 24 h, 10 s before), 200 random
   instants, each state_at + the 5-minute sparkline window.
4. Console CPU with recording on vs off: the console on the simulator, headless,
   for N seconds each (after a warm-up), process CPU time (the simulator's server is
   another process and is not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.record_synth import box_samples, build_week  # noqa: E402
from tui.gpu.model import GpuBoxSnapshot  # noqa: E402
from tui.record.model import Event, MetricsRow  # noqa: E402
from tui.record.query import RecordingReader  # noqa: E402
from tui.record.writer import Recorder  # noqa: E402

MB = 1_000_000


def _size(db: Path) -> int:
    return sum(
        p.stat().st_size for p in db.parent.glob(db.name + "*") if not p.name.endswith(".lock")
    )


def bytes_per_day(tmp: Path) -> None:
    db = tmp / "ten-minutes.sqlite"
    rng = random.Random(3)
    recorder = Recorder(db, host_label="box").start()
    base = time.time()
    empty = _size(db)
    cpu0 = time.process_time()
    for i in range(600):
        recorder.add_gpu(GpuBoxSnapshot("nvml", base + i, samples=box_samples(rng, 8, i)))
        if i % 5 == 0:
            recorder.add_metrics(
                MetricsRow(base + i, running_reqs=rng.randint(0, 64), waiting_reqs=0, kv_cache_usage_pct=rng.uniform(0, 90),
                           prompt_tokens_per_s=rng.uniform(0, 5e3), generation_tokens_per_s=rng.uniform(0, 900),
                           ttft_p50_s=0.2, ttft_p90_s=0.4, ttft_p99_s=0.9, itl_p50_s=0.012, itl_p90_s=0.02, itl_p99_s=0.05)
            )  # fmt: skip
        if i % 60 == 0:
            recorder.add_event(
                Event(base + i, "log", "log", f"WARNING synthetic line {i} " + "x" * 80)
            )
        if i % 100 == 0:
            time.sleep(1.05)  # let the writer commit as it would in real time (one per second)
    recorder.close()
    cpu = time.process_time() - cpu0
    import sqlite3

    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    used = _size(db) - empty
    print(f"10 min, 8 GPUs at 1 s: {used / MB:.2f} MB -> {used * 144 / MB:.1f} MB/day at 1 s, "
          f"{used * 14.4 / MB:.1f} MB/day downsampled to 10 s (budget 50 MB/day)")  # fmt: skip
    print(f"recorder CPU: {cpu:.3f} s for 10 recorded minutes -> {cpu * 6:.2f} s per recorded hour")


def seek_in_a_week(tmp: Path) -> None:
    db = tmp / "week.sqlite"
    now = time.time()
    started = time.perf_counter()
    ticks = build_week(db, now)
    print(
        f"synthetic week: {ticks} ticks, {_size(db) / MB:.0f} MB, built in {time.perf_counter() - started:.1f} s"
    )
    rng = random.Random(5)
    times = []
    with RecordingReader(db) as reader:
        for _ in range(200):
            at = now - rng.uniform(0, 7 * 86400)
            t0 = time.perf_counter()
            reader.state_at(at)
            reader.gpu_series(at - 300, at)
            times.append(time.perf_counter() - t0)
    times.sort()
    print(f"seek (state + 5 min of ticks), 200 random instants: median {statistics.median(times) * 1000:.1f} ms, "
          f"p99 {times[197] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms (target <= 1000 ms)")  # fmt: skip


async def _console_cpu(seconds: float, record: bool) -> float:
    os.environ["SERVEDECK_RECORD"] = "1" if record else "0"
    from tests.support.sim_fixtures import FAST_OPTIONS
    from tests.support.summary_helpers import demo_deck
    from tui.app import ServedeckApp
    from tui.sim.box import SimBox

    with tempfile.TemporaryDirectory() as state:
        box = SimBox(Path(state), load_seconds=3.0, options=FAST_OPTIONS)
        box.start()
        box.wait_until_active(120)
        app = ServedeckApp(demo_deck(box).profile, demo_deck(box))
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause(10.0)  # warm-up: overview, first listing
            cpu0 = time.process_time()
            await pilot.pause(seconds)
            cpu = time.process_time() - cpu0
    return cpu


def console_on_off(seconds: float) -> None:
    results = {}
    for record in (False, True, False, True):
        cpu = asyncio.run(_console_cpu(seconds, record))
        results.setdefault(record, []).append(cpu)
        print(
            f"console {'recording' if record else 'not recording'}: {cpu:.2f} s CPU in {seconds:.0f} s"
        )
    off, on = statistics.mean(results[False]), statistics.mean(results[True])
    print(
        f"console CPU with recording on vs off: {on:.2f} s vs {off:.2f} s ({(on / off - 1) * 100:+.1f} %)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--console-seconds", type=float, default=60.0)
    parser.add_argument("--skip-console", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("SERVEDECK_DATA_DIR", tmp + "/data")
        os.environ.setdefault("SERVEDECK_LOG_DIR", tmp + "/log")
        os.environ.setdefault("SERVEDECK_CONFIG_DIR", tmp + "/config")
        bytes_per_day(Path(tmp))
        seek_in_a_week(Path(tmp))
        if not args.skip_console:
            console_on_off(args.console_seconds)


if __name__ == "__main__":
    main()
