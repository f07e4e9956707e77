"""The live load line's parts: its wording, a lagging GPU, how a load ended, and the
watcher on real processes of this machine (one that reads, one that vanishes)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tui.gpu.model import GpuBoxSnapshot, GpuSample
from tui.hosts import LocalHost
from tui.serving.load.live import LiveLoad, describe, ended_load, final_load, lagging_gpu, with_text
from tui.serving.load.live_watch import LiveLoadWatcher
from tui.serving.load.tracker import LoadTracker
from widgets.load_why import render_why

GIB = 1024**3
MB = 1e6


def reading(**changes: object) -> LiveLoad:
    base = LiveLoad(
        phase="weights", phase_elapsed_s=83.0, bound="io", read_bytes_per_s=1.1e9,
        cpu_cores=0.3, device="nvme0n1", device_read_bytes_per_s=1.12e9,
        device_peak_bytes_per_s=2.3e9, cache_resident_pct=12.0, cache_resident_start_pct=0.0,
        lagging_gpu=None, problem=None, text="", at_s=0.0,
    )  # fmt: skip
    return with_text(replace(base, **changes))  # type: ignore[arg-type]


def test_wording_says_the_phase_why_and_the_figures() -> None:
    cold = reading()
    assert cold.text == (
        "weights 1:23: I/O-bound: reading a cold checkpoint; tree reads 1.10 GB/s, "
        "nvme0n1 1.12 GB/s (peak 2.30 GB/s), CPU 0.3 cores, 12 % cached (was 0 %)"
    )
    warm = reading(bound="cpu", read_bytes_per_s=0.0, cpu_cores=3.2, cache_resident_pct=100.0)
    assert "CPU-bound: deserializing shards from the page cache" in warm.text
    assert "100 % cached" in warm.text
    compile_ = reading(phase="compile", bound="cpu", phase_elapsed_s=45)
    assert compile_.text.startswith("torch.compile 0:45: CPU-bound: torch.compile")
    graphs = reading(phase="cuda_graphs", bound="wait", read_bytes_per_s=0.0, cpu_cores=0.1)
    assert "waiting on the GPUs: capturing CUDA graphs" in graphs.text
    # Reads that come from the cache are not "cold", whatever the rate.
    assert "cold" not in reading(cache_resident_pct=97.0).text
    slow = reading(read_bytes_per_s=9.3e6, device_read_bytes_per_s=None)
    assert "tree reads 9.3 MB/s" in slow.text and "nvme0n1" not in slow.text
    gone = reading(bound="unknown", read_bytes_per_s=None, cpu_cores=None, problem="x is gone")
    assert gone.text.endswith("; x is gone") and "-bound" not in gone.text


def box(used_gib: list[float]) -> GpuBoxSnapshot:
    samples = tuple(GpuSample(i, memory_used_bytes=int(g * GIB)) for i, g in enumerate(used_gib))
    return GpuBoxSnapshot("nvml", 0.0, samples=samples)


def test_one_gpu_far_behind_the_others_lags() -> None:
    assert lagging_gpu(box([40, 41, 12, 40.5])) == (2, 12 * GIB, int(40.5 * GIB))
    assert lagging_gpu(box([40, 41, 39, 40.5])) is None  # even
    assert lagging_gpu(box([40, 38.5, 0.2, 0.2])) is None  # two GPUs in use: no majority
    assert lagging_gpu(box([3, 3.5, 2, 3.5])) is None  # under 2 GiB behind
    assert lagging_gpu(None) is None
    live = reading(lagging_gpu=2)
    text = describe(live, (2, 12 * GIB, int(40.5 * GIB)))
    assert text.startswith("weights 1:23: GPU 2 lags: 12.0 GiB vs 40.5 GiB; I/O-bound")


def test_how_a_load_ended_prefers_the_engines_own_error() -> None:
    tracker = LoadTracker()
    tracker.apply("(APIServer pid=1) INFO 11-30 10:00:00 [api_server.py:1] vLLM server version "
                 "0.33.0, serving model m")  # fmt: skip
    tracker.apply(
        "(Worker pid=2) INFO 11-30 10:00:01 [gpu_model_runner.py:1] Starting to load model m"
    )
    last = reading(phase="weights")
    tracker.observe_exit(None)
    progress = tracker.snapshot()
    assert progress.phase == "failed"
    ended = ended_load(progress, last, 4242)
    assert ended.final and ended.text.startswith("load ended in weights after ")
    assert ended.text.endswith("serving process 4242 is gone")
    assert ended_load(progress, last, None).text.endswith("process exited with status None")
    oom = replace(progress, failure_line="torch.OutOfMemoryError: CUDA out of memory")
    assert ended_load(oom, last, 4242).text.endswith("torch.OutOfMemoryError: CUDA out of memory")
    done = final_load("load 9 s: weights read at 0.01 GB/s from vda, 0 % cached")
    assert (
        render_why(done).plain == " load  load 9 s: weights read at 0.01 GB/s from vda, 0 % cached"
    )
    assert render_why(reading()).plain.startswith(" why  weights 1:23: I/O-bound")


def _progress(phase: str = "weights"):  # type: ignore[no-untyped-def]
    tracker = LoadTracker()
    tracker.apply("(APIServer pid=1) INFO 11-30 10:00:00 [api_server.py:1] vLLM server version "
                 "0.33.0, serving model m")  # fmt: skip
    tracker.apply(
        "(Worker pid=2) INFO 11-30 10:00:01 [gpu_model_runner.py:1] Starting to load model m"
    )
    progress = tracker.snapshot()
    assert progress.phase == phase
    return progress


@pytest.mark.timeout(120)
async def test_watcher_reads_a_real_reader_then_sees_it_vanish(tmp_path: Path) -> None:
    """A child that reads a 64 MiB file from the disk (dropped from the cache first)."""
    from tui.serving.load.io import drop_from_cache

    data = tmp_path / "model-00001-of-00001.safetensors"
    data.write_bytes(b"\0" * (64 * 1024**2))
    dropped = await drop_from_cache(LocalHost(), str(tmp_path))
    if dropped.resident_bytes:
        pytest.skip("this filesystem keeps the pages (tmpfs): nothing is read from a disk")
    # The child reads once told to, after the first sample: on a loaded machine a child
    # reading at once may have read a tenth of the file before the first sample is taken.
    script = (
        "import sys, time\n"
        "f = open(sys.argv[1], 'rb')\n"
        "sys.stdin.readline()\n"
        "while f.read(1 << 20): time.sleep(0.02)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, str(data)], stdin=subprocess.PIPE)
    watcher = LiveLoadWatcher(LocalHost(), str(tmp_path))
    progress = _progress()
    try:
        first = await watcher.sample(progress, child.pid)
        assert first.bound == "unknown" and first.problem is None  # one sample: no rate yet
        assert first.cache_resident_pct is not None and first.cache_resident_pct < 5
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.flush()
        readings = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            readings.append(await watcher.sample(progress, child.pid))
            if sum(r.read_bytes_per_s or 0 for r in readings) * 0.5 > 32 * 1024**2:
                break
        assert any(r.bound == "io" and (r.read_bytes_per_s or 0) > MB for r in readings)
        assert len(watcher.explainer.samples) == len(readings) + 1  # kept for after ready
    finally:
        child.kill()
        child.wait()
    gone = await watcher.sample(progress, child.pid)
    assert gone.problem == f"serving process {child.pid} is gone"
    assert gone.read_bytes_per_s is None and gone.bound == "unknown"
    assert gone.text.startswith("weights ") and gone.text.endswith("is gone")
