"""The simulator's slow-disk mode and the load explainer on it, cold then warm.

The shards are real files (4 x 16 MiB here, to spare the shared disk; the mode is
the same for a multi-GB checkpoint) dropped from the page cache with
posix_fadvise(DONTNEED), then read by the simulated server at 16 MiB/s. The second
load finds them cached: no disk reads, a shorter weights phase, and the first
load's prediction is checked against it.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from tui.cli import main
from tui.hosts import LocalHost
from tui.serving.load.explain import LoadExplain, LoadExplainer
from tui.serving.load.history import earlier_loads, record_load
from tui.serving.load.io import checkpoint_residency, drop_from_cache, io_sample
from tui.serving.load.tracker import LoadTracker
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.shards import make_shards

MIB = 1024**2
RATE = 16 * MIB


async def one_load(box: SimBox, shard_dir: Path, earlier: list[dict]) -> LoadExplain:
    host = LocalHost()
    explainer = LoadExplainer()
    explainer.residency_before = await checkpoint_residency(host, str(shard_dir))
    offset = box.log_path.stat().st_size if box.log_path.exists() else 0
    started = time.time()
    box.start()
    deadline = time.monotonic() + 120
    while box.unit.state != "active" and time.monotonic() < deadline:
        pid = box.unit.main_pid
        explainer.observe(await io_sample(host, pid or None, str(shard_dir)))
        await asyncio.sleep(0.25)
    assert box.unit.state == "active"
    explainer.observe(await io_sample(host, box.unit.main_pid, str(shard_dir)))
    explainer.residency_now = await checkpoint_residency(host, str(shard_dir))
    with box.log_path.open("rb") as handle:
        handle.seek(offset)
        lines = handle.read().decode(errors="replace").splitlines()
    tracker = LoadTracker()
    tracker.feed_many(lines)
    return explainer.explain(tracker.snapshot(), earlier=earlier, process_started_at_s=started)


@pytest.mark.timeout(300)
async def test_slow_disk_cold_then_warm(tmp_path: Path) -> None:
    shard_dir = tmp_path / "model"
    make_shards(shard_dir, 4, 16 * MIB)
    dropped = await drop_from_cache(LocalHost(), str(shard_dir))
    if dropped.resident_bytes:
        pytest.skip("this filesystem keeps the pages (tmpfs): no cold load to see")
    options = SimServerOptions(shards=4, shard_dir=str(shard_dir), disk_bytes_per_s=RATE)
    history = tmp_path / "loads.jsonl"
    with SimBox(load_seconds=2.0, options=options) as box:
        cold = await one_load(box, shard_dir, [])
        box.stop(orphans=0)
        box.unit.wait_for_state(("inactive", "failed"), timeout_s=30)
        record_load("sim", "kimi", cold, history)
        warm = await one_load(box, shard_dir, earlier_loads("sim", "kimi", history))
    cold_weights = {p.name: p for p in cold.phases}["weights"]
    warm_weights = {p.name: p for p in warm.phases}["weights"]
    print(f"cold: {cold.diagnosis}\nwarm: {warm.diagnosis}")
    assert cold.cache_resident_before_pct is not None and cold.cache_resident_before_pct < 5
    assert cold.cache_resident_pct is not None and cold.cache_resident_pct > 95
    assert cold_weights.wall_s >= 64 * MIB / RATE - 1  # paced by the disk: ~4 s
    # Phase bounds come from log lines stamped to the second: most, not all, of the 64 MiB
    # falls inside the weights phase (measured 57-64 MiB).
    assert cold_weights.read_bytes is not None and cold_weights.read_bytes >= 40 * MIB
    assert cold_weights.bound == "io"
    assert "weights read at 0.0" in cold.diagnosis and "0 % cached" in cold.diagnosis
    assert warm.cache_resident_before_pct is not None and warm.cache_resident_before_pct > 95
    assert (warm_weights.read_bytes or 0) < 4 * MIB  # from the page cache
    # Phase times come from log stamps to the second: faster by at least one tick.
    assert warm_weights.wall_s <= cold_weights.wall_s - 1
    assert cold.predicted_next_load_s is not None and warm.wall_s is not None
    assert warm.previous_prediction_error_s == pytest.approx(
        warm.wall_s - cold.predicted_next_load_s
    )
    # The log's timestamps have a 1 s resolution: at this scale each phase is +-1 s.
    print(f"predicted {cold.predicted_next_load_s:.1f} s, took {warm.wall_s:.1f} s")
    assert abs(warm.previous_prediction_error_s) <= 3.0


def test_status_demo_json_has_load_explain(capsys) -> None:  # type: ignore[no-untyped-def]
    main(["status", "--demo", "--json"])
    explain = json.loads(capsys.readouterr().out)["load_explain"]
    assert set(explain) >= {"read_bytes_per_s", "cache_resident_pct", "phases"}
    assert "predicted_next_load_s" in explain
    assert [p["name"] for p in explain["phases"]][:2] == ["starting", "weights"]
    for phase in explain["phases"]:
        assert set(phase) == {"name", "wall_s", "bound"} and phase["wall_s"] >= 0
    assert explain["predicted_next_load_s"] is not None
