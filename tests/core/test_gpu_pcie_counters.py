"""PCIe throughput from the driver's byte counters, not a 20 ms sample per read.

A mock, because no NVIDIA driver exists on this machine or on CI (tests/support/fake_nvml.py);
the counters on a real GPU are compared with nvmlDeviceGetPcieThroughput by
tests/perf/pcie_counters_check.py. nvmlDeviceGetPcieThroughput spends ~20 ms of CPU per
direction per read; the counters are one field-values call, and their difference over the
slow interval is its mean rate.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.fake_nvml import FakeNvml, h200_box
from tui.gpu.nvml import NvmlGpuSource
from tui.gpu.nvml_calls import PcieCounters, _read_slow, pcie_rates

THROUGHPUT = "nvmlDeviceGetPcieThroughput"


def test_the_rate_is_the_counters_difference_over_the_time_between() -> None:
    before = PcieCounters(tx_bytes=1_000, rx_bytes=5_000, read_at_s=100.0)
    after = PcieCounters(tx_bytes=11_000, rx_bytes=5_000, read_at_s=105.0)
    assert pcie_rates(before, after) == (2_000.0, 0.0)
    assert pcie_rates(None, after) is None  # the first read has no rate of its own
    assert pcie_rates(before, None) is None
    wrapped = PcieCounters(tx_bytes=10, rx_bytes=6_000, read_at_s=105.0)
    assert pcie_rates(before, wrapped) is None  # a counter running backwards says nothing
    assert pcie_rates(after, before) is None  # time running backwards: no rate either


def test_a_read_after_the_first_calls_no_throughput_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (gpu,) = h200_box(1)
    gpu.pcie_tx_total_bytes, gpu.pcie_rx_total_bytes = 10_000, 20_000
    fake = FakeNvml([gpu])
    fake.install(monkeypatch.setattr)
    first = _read_slow(gpu)
    assert first.pcie_tx_bytes_per_s == 1000 * 1024.0  # the driver's sample, this once
    assert fake.calls[THROUGHPUT] == 2 and first.pcie_counters is not None
    previous = PcieCounters(10_000, 20_000, time.monotonic() - 5.0)
    gpu.pcie_tx_total_bytes += 5_000_000
    gpu.pcie_rx_total_bytes += 1_000_000
    second = _read_slow(gpu, previous)
    assert second.pcie_tx_bytes_per_s == pytest.approx(1_000_000, rel=0.01)
    assert second.pcie_rx_bytes_per_s == pytest.approx(200_000, rel=0.01)
    assert fake.calls[THROUGHPUT] == 2


@pytest.mark.parametrize(
    "tx_bytes, rx_bytes",
    [(None, None), (0, 0)],  # the field unsupported; counters that never moved: not kept
)
def test_without_counters_each_read_samples_the_driver(
    monkeypatch: pytest.MonkeyPatch, tx_bytes: int | None, rx_bytes: int | None
) -> None:
    (gpu,) = h200_box(1)
    gpu.pcie_tx_total_bytes, gpu.pcie_rx_total_bytes = tx_bytes, rx_bytes
    fake = FakeNvml([gpu])
    fake.install(monkeypatch.setattr)
    first = _read_slow(gpu)
    assert first.pcie_counters is None
    second = _read_slow(gpu, first.pcie_counters)
    assert second.pcie_rx_bytes_per_s == 1001 * 1024.0
    assert fake.calls[THROUGHPUT] == 4


def test_a_wrapped_counter_falls_back_to_the_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    (gpu,) = h200_box(1)
    gpu.pcie_tx_total_bytes, gpu.pcie_rx_total_bytes = 10, 20
    fake = FakeNvml([gpu])
    fake.install(monkeypatch.setattr)
    wrapped = _read_slow(gpu, PcieCounters(2**64 - 100, 2**64 - 50, time.monotonic() - 5.0))
    assert wrapped.pcie_tx_bytes_per_s == 1000 * 1024.0  # not a negative or huge rate
    assert wrapped.pcie_counters == PcieCounters(10, 20, wrapped.pcie_counters.read_at_s)


async def test_the_source_samples_the_driver_only_at_its_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus = h200_box(2)
    for gpu in gpus:
        gpu.pcie_tx_total_bytes, gpu.pcie_rx_total_bytes = 10_000, 20_000
    fake = FakeNvml(gpus)
    fake.install(monkeypatch.setattr)
    source = await NvmlGpuSource.open(slow_interval_s=0.02)
    try:
        deadline = time.monotonic() + 20
        while fake.calls.get("nvmlDeviceGetFieldValues", 0) < 10:  # five slow reads a GPU
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        snapshot = await source.sample()
        assert fake.calls[THROUGHPUT] == 4  # two directions, two GPUs, once
        # nothing moved since: a true 0 B/s, not unknown
        assert [s.pcie_tx_bytes_per_s for s in snapshot.samples] == [0.0, 0.0]
    finally:
        await source.aclose()
