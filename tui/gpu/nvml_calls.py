"""NVML calls made safe for NvmlGpuSource (tui/gpu/nvml.py): NOT_SUPPORTED as None, a lost
GPU told apart, a missing driver as one line, the driver's presence, sysfs facts, and
the slow metrics (PCIe throughput, ECC, throttle reasons) read for one GPU.

PCIe throughput comes from the driver's cumulative byte counters where it keeps them (one
field-values call; the rate is the mean over the slow interval): nvmlDeviceGetPcieThroughput
samples for ~20 ms per direction on the CPU (8 of the 78 busy-console samples py-spy took
on an H100). That call is kept for the first read and where the counters are missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pynvml

from tui.core.errors import ServedeckError
from tui.gpu.model import GpuSample

# NVML common-ancestor levels as `nvidia-smi topo -m` labels them.
TOPOLOGY_LABELS: dict[int, str] = {
    pynvml.NVML_TOPOLOGY_INTERNAL: "PIX",
    pynvml.NVML_TOPOLOGY_SINGLE: "PIX",
    pynvml.NVML_TOPOLOGY_MULTIPLE: "PXB",
    pynvml.NVML_TOPOLOGY_HOSTBRIDGE: "PHB",
    pynvml.NVML_TOPOLOGY_NODE: "NODE",
    pynvml.NVML_TOPOLOGY_SYSTEM: "SYS",
}

# Clock event (throttle) reasons worth showing; GPU idle is normal, not a reason to look.
THROTTLE_REASON_NAMES: tuple[tuple[int, str], ...] = (
    (0x0000000000000002, "app_clocks"),
    (0x0000000000000004, "sw_power_cap"),
    (0x0000000000000008, "hw_slowdown"),
    (0x0000000000000010, "sync_boost"),
    (0x0000000000000020, "sw_thermal"),
    (0x0000000000000040, "hw_thermal"),
    (0x0000000000000080, "hw_power_brake"),
    (0x0000000000000100, "display_clocks"),
)

_NO_DRIVER_CODES = {
    pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: "no NVIDIA driver (NVML library not found)",
    pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "no NVIDIA driver (driver not loaded)",
}
_MISSING_FUNCTION_CODES = {pynvml.NVML_ERROR_FUNCTION_NOT_FOUND, pynvml.NVML_ERROR_NOT_SUPPORTED}


class NvmlUnavailable(ServedeckError):
    """NVML cannot be used on this machine (no driver, no library, no GPU)."""


class _GpuLost(Exception):
    """Raised inside a sampling pass when one GPU answers GPU_IS_LOST."""


def nvml_driver_present() -> bool:
    """Whether NVML initialises here (a driver and at least its library); blocks briefly."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


def _error_code(error: Exception) -> int | None:
    return getattr(error, "value", None)


def _call(function: Callable[..., Any], *args: Any) -> Any:
    """One NVML call: None when unsupported or failing, _GpuLost when the GPU fell off."""
    try:
        return function(*args)
    except pynvml.NVMLError as error:
        if _error_code(error) == pynvml.NVML_ERROR_GPU_IS_LOST:
            raise _GpuLost from None
        return None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """NVML's "00000000:18:00.0" as sysfs names it: "0000:18:00.0"."""
    return nvml_bus_id.strip().lower()[-12:]


def cuda_version_text(version: int | None) -> str | None:
    """NVML's 12080 as "12.8"."""
    if not version:
        return None
    return f"{version // 1000}.{(version % 1000) // 10}"


def _read_sysfs(bus_id: str, leaf: str, sysfs_root: Path) -> str | None:
    try:
        return (sysfs_root / sysfs_bus_id(bus_id) / leaf).read_text().strip() or None
    except OSError:
        return None


# NVML_FI_DEV_PCIE_COUNT_TX_BYTES / _RX_BYTES (nvml.h; the counters may wrap).
PCIE_TX_BYTES_FIELD = getattr(pynvml, "NVML_FI_DEV_PCIE_COUNT_TX_BYTES", 197)
PCIE_RX_BYTES_FIELD = getattr(pynvml, "NVML_FI_DEV_PCIE_COUNT_RX_BYTES", 198)


@dataclass(frozen=True, slots=True)
class PcieCounters:
    """The driver's PCIe byte counters for one GPU at one read."""

    tx_bytes: int
    rx_bytes: int
    read_at_s: float  # monotonic


@dataclass(frozen=True, slots=True)
class _SlowMetrics:
    pcie_tx_bytes_per_s: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    ecc_uncorrected_errors: int | None = None
    throttle_reasons: tuple[str, ...] = ()
    pcie_counters: PcieCounters | None = None  # for the next read's rate


def _call_quiet(function: Callable[..., Any], *args: Any) -> Any:
    """Like _call, but a lost GPU is just None (for start-up facts)."""
    try:
        return _call(function, *args)
    except _GpuLost:
        return None


def _lost_sample(index: int) -> GpuSample:
    return GpuSample(index=index, lost=True, error="GPU is lost (fell off the bus); reset needed")


def read_pcie_counters(handle: Any) -> PcieCounters | None:
    """Both PCIe byte counters in one call; None where the driver or GPU keeps none."""
    values = _call(pynvml.nvmlDeviceGetFieldValues, handle, [PCIE_TX_BYTES_FIELD,
                                                             PCIE_RX_BYTES_FIELD])  # fmt: skip
    if values is None or len(values) != 2:
        return None
    read_at_s = time.monotonic()
    counts = []
    for value in values:
        if value.nvmlReturn != pynvml.NVML_SUCCESS:
            return None
        kind = value.valueType
        if kind == pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
            counts.append(int(value.value.ullVal))
        elif kind == pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG:
            counts.append(int(value.value.ulVal))
        elif kind == pynvml.NVML_VALUE_TYPE_UNSIGNED_INT:
            counts.append(int(value.value.uiVal))
        else:
            return None
    if counts == [0, 0]:  # a link that carried nothing since the driver loaded: not kept
        return None
    return PcieCounters(counts[0], counts[1], read_at_s)


def pcie_rates(
    before: PcieCounters | None, after: PcieCounters | None
) -> tuple[float, float] | None:
    """Bytes per second each way between two reads; None without two ordered reads (a
    wrapped or reset counter runs backwards)."""
    if before is None or after is None:
        return None
    elapsed_s = after.read_at_s - before.read_at_s
    tx_bytes, rx_bytes = after.tx_bytes - before.tx_bytes, after.rx_bytes - before.rx_bytes
    if elapsed_s <= 0 or tx_bytes < 0 or rx_bytes < 0:
        return None
    return tx_bytes / elapsed_s, rx_bytes / elapsed_s


def _read_slow(handle: Any, previous: PcieCounters | None = None) -> _SlowMetrics:
    counters = read_pcie_counters(handle)
    rates = pcie_rates(previous, counters)
    tx_bytes_per_s: float | None
    rx_bytes_per_s: float | None
    if rates is not None:
        tx_bytes_per_s, rx_bytes_per_s = rates
    else:  # the first read, no counters, or a wrapped one: the driver's 20 ms sample
        tx_kib = _call(pynvml.nvmlDeviceGetPcieThroughput, handle, pynvml.NVML_PCIE_UTIL_TX_BYTES)
        rx_kib = _call(pynvml.nvmlDeviceGetPcieThroughput, handle, pynvml.NVML_PCIE_UTIL_RX_BYTES)
        tx_bytes_per_s = tx_kib * 1024.0 if tx_kib is not None else None
        rx_bytes_per_s = rx_kib * 1024.0 if rx_kib is not None else None
    ecc = _call(
        pynvml.nvmlDeviceGetTotalEccErrors,
        handle,
        pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
        pynvml.NVML_VOLATILE_ECC,
    )
    reasons_fn = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    reasons = _call(reasons_fn, handle) if reasons_fn is not None else None
    if reasons is None:
        reasons = _call(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons, handle)
    return _SlowMetrics(
        pcie_tx_bytes_per_s=tx_bytes_per_s,
        pcie_rx_bytes_per_s=rx_bytes_per_s,
        ecc_uncorrected_errors=ecc,
        throttle_reasons=tuple(name for bit, name in THROTTLE_REASON_NAMES if (reasons or 0) & bit),
        pcie_counters=counters,
    )
