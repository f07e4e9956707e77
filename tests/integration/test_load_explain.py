"""The load explainer's parts on this machine: residency by fincore and by mincore,
read counters of a real process tree and block device, and the explanation of a real
vLLM 0.32 log (tests/support/fixtures/vllm-0.32-cpu/server.log).

Files are written to pytest's tmp folder (ext4 here, so posix_fadvise(DONTNEED)
really empties the cache; on tmpfs it cannot, and the cold checks are skipped).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui.hosts import LocalHost
from tui.serving.load.explain import LoadExplainer, bound_of, predict_next_s, waterfall
from tui.serving.load.history import earlier_loads, record_load
from tui.serving.load.io import (
    IoSample,
    Residency,
    checkpoint_residency,
    drop_from_cache,
    io_sample,
)
from tui.serving.load.tracker import LoadTracker

FIXTURE_LOG = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu" / "server.log"
MIB = 1024**2


def shards(folder: Path, count: int = 4, size: int = 8 * MIB) -> Path:
    folder.mkdir()
    for index in range(count):
        path = folder / f"model-0000{index + 1}-of-0000{count}.safetensors"
        path.write_bytes(os.urandom(size))
    (folder / "config.json").write_text("{}")  # not a shard: not counted
    return folder


def on_tmpfs(path: Path) -> bool:
    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return out.stdout.strip() == "tmpfs"


@pytest.mark.parametrize("fincore", [True, False], ids=["fincore", "mincore"])
async def test_residency_cold_then_warm(tmp_path: Path, fincore: bool) -> None:
    folder = shards(tmp_path / "model")
    if on_tmpfs(folder):
        pytest.skip("tmpfs keeps every page: no cold state to see")
    host = LocalHost()
    dropped = await drop_from_cache(host, str(folder))
    assert dropped.files == 4 and dropped.size_bytes == 32 * MIB
    cold = await checkpoint_residency(host, str(folder), prefer_fincore=fincore)
    assert cold.method == ("fincore" if fincore else "mincore")
    assert cold.files == 4 and cold.size_bytes == 32 * MIB
    assert cold.resident_pct is not None and cold.resident_pct < 5
    for path in folder.glob("*.safetensors"):
        path.read_bytes()
    warm = await checkpoint_residency(host, str(folder), prefer_fincore=fincore)
    assert warm.resident_pct is not None and warm.resident_pct > 95


async def test_residency_of_a_missing_folder_is_empty_not_a_crash(tmp_path: Path) -> None:
    gone = await checkpoint_residency(LocalHost(), str(tmp_path / "nope"), prefer_fincore=False)
    assert gone.resident_pct is None and gone.errors


async def test_a_reading_tree_and_its_device_are_counted(tmp_path: Path) -> None:
    folder = shards(tmp_path / "model", count=1, size=32 * MIB)
    host = LocalHost()
    await drop_from_cache(host, str(folder))
    before = await io_sample(host, os.getpid(), str(folder))
    # A child of this test reads the shard: the tree rooted here includes it.
    subprocess.run(
        [sys.executable, "-c", f"open({str(next(folder.glob('*.safetensors')))!r}, 'rb').read()"],
        check=True,
    )
    after = await io_sample(host, os.getpid(), str(folder))
    assert before.tree_read_bytes is not None and after.tree_read_bytes is not None
    if not on_tmpfs(folder):
        # A reaped child's reads are folded into the parent only via wait(); read the
        # device instead, which saw them whatever the process accounting does.
        assert after.device is not None
        assert after.device_read_bytes is not None and before.device_read_bytes is not None
        assert after.device_read_bytes - before.device_read_bytes >= 30 * MIB
    # The tree includes the short-lived sampling helper itself: its CPU leaves with it,
    # so the sum may dip by that much between samples.
    assert after.tree_cpu_s is not None and after.tree_cpu_s >= (before.tree_cpu_s or 0) - 0.2


def fixture_progress():  # type: ignore[no-untyped-def]
    tracker = LoadTracker()
    tracker.feed_many(FIXTURE_LOG.read_text().splitlines())
    return tracker.snapshot()


def test_waterfall_of_a_real_log_sums_to_the_wall_time_and_shows_gaps() -> None:
    progress = fixture_progress()
    serving = next(s for s in progress.timeline if s.phase == "serving")
    steps = waterfall(progress, first_answer_at_s=serving.started_at_s + 2.5)
    names = [s.name for s in steps]
    assert names[0] == "process start" and names[-1] == "API up -> first answer"
    # "Loading weights took 0.00 s" in a 1 s phase: the step is the phase's span, vLLM's
    # figure beside it (one duration per phase, the load timeline's)
    weights = next(s for s in steps if s.name == "weights")
    span = next(s for s in progress.timeline if s.phase == "weights")
    assert weights.wall_s == span.duration_s and weights.stated_s == 0.0
    start = progress.timeline[0].started_at_s
    wall = serving.started_at_s + 2.5 - start
    assert abs(sum(s.wall_s for s in steps) - wall) < 1e-6
    for first, second in itertools.pairwise(steps):
        assert abs(first.start_s + first.wall_s - second.start_s) < 1e-6  # no overlaps


def samples_for(progress, read_rate: float, cpu_cores: float) -> list[IoSample]:  # type: ignore[no-untyped-def]
    """Counters rising at fixed rates over the load (the pure part's input)."""
    start = progress.timeline[0].started_at_s
    return [
        IoSample(start + t, int(read_rate * t), cpu_cores * t, "vda", int(read_rate * t))
        for t in range(0, 40)
    ]


def test_bounds_prediction_diagnosis_and_the_check_at_the_next_load(tmp_path: Path) -> None:
    assert bound_of(500 * MIB, 0.1, 1.0) == "io"
    assert bound_of(0, 0.9, 1.0) == "cpu"
    assert bound_of(0, 0.01, 1.0) == "wait"
    assert bound_of(None, 1.0, 1.0) == "unknown"
    progress = fixture_progress()
    size = 1000 * MIB
    cold = LoadExplainer(
        samples=samples_for(progress, 100 * MIB, 0.2),
        residency_before=Residency(4, size, 0, "mincore"),
        residency_now=Residency(4, size, size, "mincore"),
    ).explain(progress)
    phases = {p.name: p for p in cold.phases}
    assert phases["weights"].bound == "io" and phases["compile"].bound == "io"
    # 100 MiB/s for the 1 s weights phase, all of it uncached; next time all cached.
    assert cold.predicted_next_load_s is not None and cold.wall_s is not None
    assert cold.predicted_next_load_s < cold.wall_s
    assert cold.diagnosis.startswith(
        "load 30 s (first log line to API up): weights read at 0.10 GB/s from vda, 0 % cached"
    )
    history = tmp_path / "loads.jsonl"
    record_load("box", "tiny", cold, history)
    history.open("a").write("not json\n")
    earlier = earlier_loads("box", "tiny", history)
    assert len(earlier) == 1 and earlier_loads("other", "tiny", history) == []
    warm = LoadExplainer(
        samples=samples_for(progress, 0, 0.9),
        residency_before=Residency(4, size, size, "mincore"),
        residency_now=Residency(4, size, size, "mincore"),
    ).explain(progress, earlier=earlier)
    assert warm.previous_prediction_error_s == pytest.approx(
        warm.wall_s - cold.predicted_next_load_s  # type: ignore[operator]
    )
    assert warm.earlier_wall_s == (cold.wall_s,)
    assert {p.name: p.bound for p in warm.phases}["compile"] == "cpu"
    assert predict_next_s((), None, None, None, None) is None
    data = warm.as_json()
    assert set(data) >= {"read_bytes_per_s", "cache_resident_pct", "phases"}
    assert set(data["phases"][0]) == {"name", "wall_s", "bound"}
