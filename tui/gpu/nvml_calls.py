"""NVML calls made safe for NvmlGpuSource (tui/gpu/nvml.py): NOT_SUPPORTED as None, a lost
GPU told apart, a missing driver as one line, the driver's presence, sysfs facts, and
the slow metrics (PCIe throughput, ECC, throttle reasons) read for one GPU.
"""

from __future__ import annotations

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


@dataclass(frozen=True, slots=True)
class _SlowMetrics:
    pcie_tx_bytes_per_s: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    ecc_uncorrected_errors: int | None = None
    throttle_reasons: tuple[str, ...] = ()


def _call_quiet(function: Callable[..., Any], *args: Any) -> Any:
    """Like _call, but a lost GPU is just None (for start-up facts)."""
    try:
        return _call(function, *args)
    except _GpuLost:
        return None


def _lost_sample(index: int) -> GpuSample:
    return GpuSample(index=index, lost=True, error="GPU is lost (fell off the bus); reset needed")


def _read_slow(handle: Any) -> _SlowMetrics:
    tx_kib = _call(pynvml.nvmlDeviceGetPcieThroughput, handle, pynvml.NVML_PCIE_UTIL_TX_BYTES)
    rx_kib = _call(pynvml.nvmlDeviceGetPcieThroughput, handle, pynvml.NVML_PCIE_UTIL_RX_BYTES)
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
        pcie_tx_bytes_per_s=tx_kib * 1024.0 if tx_kib is not None else None,
        pcie_rx_bytes_per_s=rx_kib * 1024.0 if rx_kib is not None else None,
        ecc_uncorrected_errors=ecc,
        throttle_reasons=tuple(name for bit, name in THROTTLE_REASON_NAMES if (reasons or 0) & bit),
    )
