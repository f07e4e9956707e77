"""NvmlGpuSource against a fake NVML.

A mock, because no NVIDIA driver exists on this machine or on CI: tests/support/fake_nvml.py
replaces pynvml's functions. The real driver path is checked on a GPU machine by
tests/perf/h200_verify.py.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import time

import pynvml
import pytest

from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, h200_box
from tui.gpu.nvml import NvmlGpuSource
from tui.gpu.nvml_calls import NvmlUnavailable, cuda_version_text, sysfs_bus_id


async def _poll_until(source: NvmlGpuSource, predicate, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while True:
        snapshot = await source.sample()
        if predicate(snapshot) or time.monotonic() > deadline:
            return snapshot
        await asyncio.sleep(0.05)


async def test_two_gpus_normal(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = h200_box(2)
    gpus[0].processes = [(os.getpid(), 5 * GIB)]  # a real pid: user and age come from /proc
    fake = FakeNvml(gpus)
    fake.install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=0.05)
    try:
        snapshot = await _poll_until(source, lambda s: s.samples[1].pcie_tx_bytes_per_s)
        assert snapshot.available and snapshot.source == "nvml"
        assert snapshot.driver_version == "570.124.06" and snapshot.cuda_version == "12.8"
        assert [s.name for s in snapshot.statics] == ["NVIDIA H200", "NVIDIA H200"]
        assert snapshot.statics[0].compute_capability == "9.0"
        assert snapshot.statics[1].power_limit_w == 700.0
        assert snapshot.statics[0].nvlink_active_links == 18
        assert snapshot.topology == (("X", "NV18"), ("NV18", "X"))
        first, second = snapshot.samples
        assert first.memory_used_bytes == 60 * GIB and second.memory_used_bytes == 61 * GIB
        assert first.memory_total_bytes == 143771 * 1024**2
        assert first.power_w == pytest.approx(120.5) and second.temperature_c == 41.0
        assert second.pcie_tx_bytes_per_s == 1000 * 1024.0
        assert second.pcie_rx_bytes_per_s == 1001 * 1024.0
        assert second.throttle_reasons == ("sw_power_cap",)
        (proc,) = first.processes
        assert proc.pid == os.getpid() and proc.used_memory_bytes == 5 * GIB
        assert proc.user == getpass.getuser()
        assert proc.started_at_s is not None and proc.started_at_s <= time.time()
        assert "python" in proc.process_name or "pytest" in proc.process_name
        assert second.processes[0].process_name == "python4001"  # not in /proc: NVML's name
    finally:
        await source.aclose()
    assert not fake.initialised  # nvmlShutdown was called


async def test_slow_metrics_never_run_on_the_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml(h200_box(2))
    fake.install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=3600)
    try:
        await _poll_until(source, lambda s: s.samples[1].pcie_rx_bytes_per_s is not None)
        before = fake.calls.get("nvmlDeviceGetPcieThroughput", 0)
        for _ in range(5):
            await source.sample()
        assert fake.calls["nvmlDeviceGetPcieThroughput"] == before == 4
    finally:
        await source.aclose()


async def test_not_supported_fields_are_none(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = h200_box(2)
    gpus[1].unsupported = {
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetNumaNodeId",
        "nvmlDeviceGetPcieThroughput",
        "nvmlDeviceGetCurrPcieLinkGeneration",
    }
    FakeNvml(gpus).install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=0.05)
    try:
        snapshot = await _poll_until(source, lambda s: s.samples[0].pcie_tx_bytes_per_s)
        ok, partial = snapshot.samples
        assert ok.temperature_c == 40.0 and ok.power_w is not None
        assert partial.temperature_c is None and partial.power_w is None
        assert partial.pcie_gen is None and partial.pcie_width == 16
        assert partial.pcie_tx_bytes_per_s is None
        assert partial.memory_used_bytes == 61 * GIB and not partial.lost
        # no NUMA id from NVML and no sysfs entry for a fake bus id: unknown, not 0
        assert snapshot.statics[1].numa_node is None and snapshot.statics[0].numa_node == 0
    finally:
        await source.aclose()


async def test_unified_memory_falls_back_to_process_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(index=0, name="NVIDIA GB10", processes=[(111, 3 * GIB), (112, 2 * GIB)])
    gpu.unsupported = {"nvmlDeviceGetMemoryInfo"}
    FakeNvml([gpu]).install(monkeypatch.setattr)
    source = await NvmlGpuSource.open()
    try:
        (sample,) = (await source.sample()).samples
        assert sample.memory_used_bytes == 5 * GIB
        assert sample.memory_total_bytes is None
    finally:
        await source.aclose()


async def test_lost_gpu_is_marked_and_others_keep_updating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus = h200_box(2)
    FakeNvml(gpus).install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=0.05)
    try:
        assert not any(s.lost for s in (await source.sample()).samples)
        gpus[0].lost = True
        gpus[1].memory_used_bytes = 70 * GIB
        lost, alive = (await source.sample()).samples
        assert lost.lost and lost.memory_used_bytes is None and "lost" in (lost.error or "")
        assert not alive.lost and alive.memory_used_bytes == 70 * GIB
        gpus[0].lost = False  # stays lost: a fallen-off GPU needs a reset, not a retry
        gpus[1].memory_used_bytes = 71 * GIB
        lost, alive = (await source.sample()).samples
        assert lost.lost and alive.memory_used_bytes == 71 * GIB
    finally:
        await source.aclose()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "no NVIDIA driver (NVML library not found)"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "no NVIDIA driver (driver not loaded)"),
    ],
)
async def test_no_driver(monkeypatch: pytest.MonkeyPatch, code: int, message: str) -> None:
    FakeNvml([], init_error=code).install(monkeypatch.setattr)
    with pytest.raises(NvmlUnavailable, match=r"no NVIDIA driver"):
        await NvmlGpuSource.open()
    source = NvmlGpuSource()
    snapshot = await source.sample()
    assert not snapshot.available and snapshot.error == message
    assert snapshot.samples == ()
    await source.aclose()


async def test_driver_without_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeNvml([]).install(monkeypatch.setattr)
    with pytest.raises(NvmlUnavailable, match="no NVIDIA GPU found"):
        await NvmlGpuSource.open()


async def test_process_calls_fall_back_from_v3(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = h200_box(1)
    gpus[0].graphics_processes = [(4000, 1 * GIB), (5000, 2 * GIB)]
    fake = FakeNvml(
        gpus,
        missing={
            "nvmlDeviceGetComputeRunningProcesses_v3",
            "nvmlDeviceGetGraphicsRunningProcesses_v3",
            "nvmlDeviceGetGraphicsRunningProcesses_v2",
        },
    )
    fake.install(monkeypatch.setattr)
    source = await NvmlGpuSource.open()
    try:
        for _ in range(3):
            (sample,) = (await source.sample()).samples
        by_pid = {p.pid: p for p in sample.processes}
        assert by_pid[4000].kind == "compute+graphics"
        assert by_pid[4000].used_memory_bytes == 60 * GIB
        assert by_pid[5000].kind == "graphics" and by_pid[5000].used_memory_bytes == 2 * GIB
        # the missing versions are tried once, then the working one is used directly
        assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 1
        assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v2"] == 3
        assert fake.calls["nvmlDeviceGetGraphicsRunningProcesses"] == 3
    finally:
        await source.aclose()


def test_small_conversions() -> None:
    assert sysfs_bus_id("00000000:1A:00.0") == "0000:1a:00.0"
    assert cuda_version_text(12080) == "12.8" and cuda_version_text(13000) == "13.0"
    assert cuda_version_text(None) is None


async def test_used_memory_is_what_nvidia_smi_states_with_the_reserve_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An idle H200 read 615 MiB used where nvidia-smi says 0: NVML v1 counts the driver's
    reserve as used. v2 states it apart; v1 only where the driver lacks v2."""
    reserve_bytes = 615 * 1024**2
    gpus = h200_box(1, loaded=False)
    gpus[0].memory_reserved_bytes = reserve_bytes
    FakeNvml(gpus).install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=0.05)
    try:
        sample = (await source.sample()).samples[0]
        assert sample.memory_used_bytes == 0
        assert sample.memory_reserved_bytes == reserve_bytes
    finally:
        await source.aclose()
    FakeNvml(gpus, missing={"nvmlDeviceGetMemoryInfo_v2"}).install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=0.05)
    try:
        sample = (await source.sample()).samples[0]
        assert sample.memory_used_bytes == reserve_bytes  # all v1 can say
        assert sample.memory_reserved_bytes is None
    finally:
        await source.aclose()


async def test_a_process_outside_proc_is_named_by_nvml_once_while_it_holds_the_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pid /proc does not show (another pid namespace: a container) takes its name from
    NVML: asked once while it stays on a GPU, not on every tick for every process."""
    gpus = h200_box(8)
    for gpu in gpus:  # pids above any pid_max: never in this machine's /proc
        gpu.processes = [(5_000_000 + gpu.index, 60 * GIB)]
    fake = FakeNvml(gpus)
    fake.install(monkeypatch.setattr)
    source = await NvmlGpuSource.open()
    try:
        for _ in range(5):
            snapshot = await source.sample()
        names = {p.pid: p.process_name for p in snapshot.processes()}
        assert names == {5_000_000 + i: f"python{5_000_000 + i}" for i in range(8)}
        assert fake.calls["nvmlSystemGetProcessName"] == 8  # was 40: 8 GPUs x 5 ticks
        gpus[0].processes = []  # it left the GPU: a pid that comes back is asked afresh
        await source.sample()
        gpus[0].processes = [(5_000_000, 60 * GIB)]
        await source.sample()
        assert fake.calls["nvmlSystemGetProcessName"] == 9
    finally:
        await source.aclose()
