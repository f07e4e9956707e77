"""Per-process SM and memory utilization through NvmlGpuSource, against a fake NVML.

A mock, because no NVIDIA driver exists on this machine or on CI (tests/support/fake_nvml.py
replaces pynvml's functions); the processes are real, so their start times come from /proc.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pynvml
import pytest

from tests.support.fake_nvml import GIB, FakeNvml, h200_box
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage
from tui.gpu.nvml import NvmlGpuSource
from tui.gpu.proc_util import START_UNCERTAINTY_S, averaged

UTIL_CALL = "nvmlDeviceGetProcessUtilization"


@pytest.fixture
def idle_process() -> Iterator[subprocess.Popen[bytes]]:
    """A real process that holds the GPU (as the fake says) and does no work on it, started
    surely before the source's first read (a /proc start time is up to 1 s early)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(START_UNCERTAINTY_S + 0.1)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def _usage(snapshot: GpuBoxSnapshot, gpu: int, pid: int) -> GpuProcessUsage:
    return next(p for p in snapshot.samples[gpu].processes if p.pid == pid)


async def test_supported_gpu_gives_each_process_its_mean_since_the_last_read(
    monkeypatch: pytest.MonkeyPatch, idle_process: subprocess.Popen[bytes]
) -> None:
    me = os.getpid()
    gpus = h200_box(2)
    gpus[0].processes = [(me, 40 * GIB), (idle_process.pid, GIB)]
    gpus[0].process_samples = [(1_000, me, 80, 30), (2_000, me, 60, 50)]
    gpus[1].process_samples = []  # pid 4001 (not in /proc here): no sample, start unknown
    FakeNvml(gpus).install(monkeypatch.setattr)
    # the slow thread's next read is an hour away: the test makes each read itself
    source = await NvmlGpuSource.open(slow_interval_s=3600)
    try:
        first = await source.sample()
        busy = _usage(first, 0, me)
        assert (busy.sm_util_percent, busy.memory_util_percent) == (70.0, 40.0)
        idle = _usage(first, 0, idle_process.pid)
        assert (idle.sm_util_percent, idle.memory_util_percent) == (0.0, 0.0)  # no work: 0
        unknown = _usage(first, 1, 4001)
        assert unknown.sm_util_percent is None and unknown.memory_util_percent is None
        # the next read averages only the samples since the last one
        gpus[0].process_samples.append((3_000, me, 10, 5))
        await asyncio.to_thread(source._read_process_util_into, 0, gpus[0])
        busy = _usage(await source.sample(), 0, me)
        assert (busy.sm_util_percent, busy.memory_util_percent) == (10.0, 5.0)
        # and a read with no sample since (NVML: NOT_FOUND) says it did no work
        await asyncio.to_thread(source._read_process_util_into, 0, gpus[0])
        assert _usage(await source.sample(), 0, me).sm_util_percent == 0.0
    finally:
        await source.aclose()


async def test_not_supported_is_unknown_never_zero_and_not_asked_again(
    monkeypatch: pytest.MonkeyPatch, idle_process: subprocess.Popen[bytes]
) -> None:
    gpus = h200_box(1)
    gpus[0].processes = [(idle_process.pid, GIB)]  # an idle process: 0 had the GPU answered
    gpus[0].unsupported = {UTIL_CALL}
    fake = FakeNvml(gpus)
    fake.install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=0.05)
    try:
        await asyncio.sleep(0.3)  # several slow passes
        usage = _usage(await source.sample(), 0, idle_process.pid)
        assert usage.sm_util_percent is None and usage.memory_util_percent is None
        assert fake.calls[UTIL_CALL] == 1  # at open; NOT_SUPPORTED is not asked again
    finally:
        await source.aclose()


async def test_a_process_started_after_the_read_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = h200_box(1)
    gpus[0].process_samples = []
    FakeNvml(gpus).install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=3600)  # the open read only
    await asyncio.sleep(0.05)
    late = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gpus[0].processes = [(late.pid, GIB)]
        usage = _usage(await source.sample(), 0, late.pid)
        assert usage.sm_util_percent is None  # the read knew nothing of it
    finally:
        late.kill()
        late.wait()
        await source.aclose()


async def test_utilization_is_read_in_the_slow_thread_never_on_the_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeNvml(h200_box(2))
    fake.install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=3600)
    try:
        before = fake.calls[UTIL_CALL]
        for _ in range(5):
            await source.sample()
        assert fake.calls[UTIL_CALL] == before == 2  # once per GPU, at open
    finally:
        await source.aclose()


async def test_the_slow_thread_asks_only_gpus_someone_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The read costs the slow thread more than its other reads together (py-spy, H100): a GPU
    with no process has no figure to give, so an idle box never pays for it."""
    gpus = h200_box(2)
    gpus[1].processes = []  # GPU 1 idle; GPU 0 held by pid 4000
    fake = FakeNvml(gpus)
    fake.install(monkeypatch.setattr)
    asked: list[object] = []
    real = getattr(pynvml, UTIL_CALL)

    def counted(handle: object, since_us: int) -> object:
        asked.append(handle)
        return real(handle, since_us)

    monkeypatch.setattr(pynvml, UTIL_CALL, counted)
    source = await NvmlGpuSource.open(slow_interval_s=0.05)
    try:
        await source.sample()  # each GPU's holders, as the slow thread will see them
        asked.clear()
        await asyncio.sleep(0.5)  # several slow cycles
        assert asked and all(handle is gpus[0] for handle in asked)
    finally:
        await source.aclose()


def test_averaged_skips_garbage_and_keeps_the_newest_timestamp() -> None:
    def sample(at_us: int, pid: int, sm: int, mem: int) -> SimpleNamespace:
        return SimpleNamespace(pid=pid, timeStamp=at_us, smUtil=sm, memUtil=mem)

    read = averaged([sample(5, 1, 50, 4294967295), sample(9, 1, 30, 10)], 100.0, 2)
    assert read.last_seen_us == 9
    assert read.figures(1, None) == (40.0, 10.0)  # 4294967295 is no percentage
    assert read.figures(2, 98.0) == (0.0, 0.0)  # started surely before the read: no work
    assert read.figures(2, 99.5) == (None, None)  # maybe after it: unknown
    assert averaged([], 100.0, 7).last_seen_us == 7
