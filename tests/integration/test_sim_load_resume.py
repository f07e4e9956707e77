"""A load resumed mid-way (a fleet row opened while it loads) keeps its past; a restart does not.

Real simulator processes: the box starts with `load_started_s` 100 s ago on a 600 s load,
so its log holds the lines already due, stamped when they were due; a restart of the unit
then loads from zero, now.
"""

from __future__ import annotations

import time

from tui.serving.load.tracker import LoadTracker
from tui.sim.box import SimBox, SimServerOptions


def _progress(box: SimBox, since_line: int = 0) -> tuple[float | None, int | None]:
    tracker = LoadTracker()
    tracker.feed_many(box.log_path.read_text().splitlines()[since_line:])
    shown = tracker.snapshot(time.time())
    return shown.load_elapsed_s, shown.shards_done


def _wait(box: SimBox, since_line: int, shards: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if box.log_path.exists() and (_progress(box, since_line)[1] or 0) >= shards:
            return
        time.sleep(0.1)
    raise AssertionError(box.log_path.read_text())


def test_a_resumed_load_keeps_its_past_and_a_restart_starts_from_zero() -> None:
    with SimBox(load_seconds=600.0, options=SimServerOptions(shards=24, tp=2), gpu_count=2) as box:
        began = time.time() - 100.0
        box.start(load_started_s=began)
        # 100 s in: 24 s starting, then 19.5 s a shard: 3 shards done.
        _wait(box, 0, 3)
        elapsed, shards = _progress(box)
        assert elapsed is not None and abs(elapsed - (time.time() - began)) < 3.0, elapsed
        assert shards == 3
        assert box.unit.main_start_s == began
        lines = len(box.log_path.read_text().splitlines())
        box.restart()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            fresh = _progress(box, lines)
            if fresh[0] is not None:
                break
            time.sleep(0.1)
        assert fresh[0] is not None and fresh[0] < 5.0, fresh
        assert box.unit.main_start_s is not None and time.time() - box.unit.main_start_s < 10
