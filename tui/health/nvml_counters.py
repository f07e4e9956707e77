"""Per-GPU health counters through NVML, for GPUs on this machine.

The same HealthCounters `nvidia-smi -q` gives, plus what only NVML gives: the NVLink
error counters (replay, recovery, CRC) per link, summed. Each call the driver refuses
(NotSupported on this GPU, a function this driver lacks) leaves its field None, drawn
n/a, and is named in `unavailable`; a GPU that fell off the bus keeps its row. Blocking:
run it in a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pynvml

from tui.gpu.nvml_calls import NvmlUnavailable
from tui.health.counters import HealthCounters
from tui.health.interconnect.parse import norm_bdf

# NVML's clock event (throttle) bits, named as `nvidia-smi -q` names them, so the badge
# rules read both sources alike. Idle, application and display clocks are not trouble.
CLOCK_EVENT_NAMES: tuple[tuple[int, str], ...] = (
    (0x0000000000000004, "SW Power Cap"),
    (0x0000000000000008, "HW Slowdown"),
    (0x0000000000000010, "Sync Boost"),
    (0x0000000000000020, "SW Thermal Slowdown"),
    (0x0000000000000040, "HW Thermal Slowdown"),
    (0x0000000000000080, "HW Power Brake Slowdown"),
)
_NVLINK_COUNTERS = (
    ("nvlink_replay_errors", pynvml.NVML_NVLINK_ERROR_DL_REPLAY),
    ("nvlink_recovery_errors", pynvml.NVML_NVLINK_ERROR_DL_RECOVERY),
    ("nvlink_crc_flit_errors", pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT),
    ("nvlink_crc_data_errors", pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA),
)
_VIOLATIONS = (
    ("Power", pynvml.NVML_PERF_POLICY_POWER),
    ("Thermal", pynvml.NVML_PERF_POLICY_THERMAL),
)


class _Reader:
    """One GPU's calls; remembers which ones the driver refused and why."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.unavailable: list[str] = []
        self.lost = False

    def call(self, name: str, *args: Any, label: str | None = None) -> Any:
        function: Callable[..., Any] | None = getattr(pynvml, name, None)
        if function is None:
            self.unavailable.append(f"{label or name}: not in this nvidia-ml-py")
            return None
        if self.lost:
            return None
        try:
            return function(self.handle, *args)
        except pynvml.NVMLError as error:
            if getattr(error, "value", None) == pynvml.NVML_ERROR_GPU_IS_LOST:
                self.lost = True
            self.unavailable.append(f"{label or name}: {error}")
            return None


def _ecc(reader: _Reader, uncorrected: bool, counter: int, label: str) -> int | None:
    kind = (
        pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        if uncorrected
        else pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED
    )
    value = reader.call("nvmlDeviceGetTotalEccErrors", kind, counter, label=label)
    return int(value) if value is not None else None


def _nvlink(reader: _Reader) -> dict[str, int | None]:
    """Per counter, the sum over the active links; None when no link reported it."""
    sums: dict[str, int | None] = {field: None for field, _ in _NVLINK_COUNTERS}
    refused: dict[str, str] = {}
    for link in range(int(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18))):
        try:
            active = pynvml.nvmlDeviceGetNvLinkState(reader.handle, link)
        except pynvml.NVMLError as error:
            if link == 0:  # no NVLink on this GPU (or not reported): all n/a
                reader.unavailable.append(f"nvmlDeviceGetNvLinkState: {error}")
            break
        if not active:
            continue
        for field, counter in _NVLINK_COUNTERS:
            try:
                value = int(pynvml.nvmlDeviceGetNvLinkErrorCounter(reader.handle, link, counter))
            except pynvml.NVMLError as error:
                refused.setdefault(field, str(error))
                continue
            sums[field] = (sums[field] or 0) + value
    for field, why in refused.items():
        if sums[field] is None:
            reader.unavailable.append(f"nvmlDeviceGetNvLinkErrorCounter({field}): {why}")
    return sums


def counters_for(index: int, handle: Any) -> HealthCounters:
    """One GPU's counters; never raises for an NVML error (the field stays None)."""
    reader = _Reader(handle)
    pci = reader.call("nvmlDeviceGetPciInfo")
    raw_bus = getattr(pci, "busId", b"") if pci is not None else b""
    bus = norm_bdf(raw_bus.decode() if isinstance(raw_bus, bytes) else str(raw_bus))
    rows = reader.call("nvmlDeviceGetRemappedRows")
    correctable = uncorrectable = pending = failure = None
    if isinstance(rows, tuple | list) and len(rows) >= 4:
        correctable, uncorrectable, pending, failure = (int(v) for v in rows[:4])
    retired_pending = reader.call("nvmlDeviceGetRetiredPagesPendingStatus")
    sbe = reader.call(
        "nvmlDeviceGetRetiredPages",
        pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
        label="nvmlDeviceGetRetiredPages(sbe)",
    )
    dbe = reader.call(
        "nvmlDeviceGetRetiredPages",
        pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
        label="nvmlDeviceGetRetiredPages(dbe)",
    )
    if hasattr(pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons"):
        reasons = reader.call("nvmlDeviceGetCurrentClocksThrottleReasons")
    else:  # newer bindings may drop the old name
        reasons = reader.call("nvmlDeviceGetCurrentClocksEventReasons")
    violations = []
    for name, policy in _VIOLATIONS:
        status = reader.call("nvmlDeviceGetViolationStatus", policy, label=f"violation({name})")
        if status is not None:
            violations.append((name, int(status.violationTime) // 1000))  # ns -> us
    replays = reader.call("nvmlDeviceGetPcieReplayCounter")
    volatile, aggregate = pynvml.NVML_VOLATILE_ECC, pynvml.NVML_AGGREGATE_ECC
    ecc = (
        _ecc(reader, False, volatile, "ecc(volatile, corrected)"),
        _ecc(reader, True, volatile, "ecc(volatile, uncorrected)"),
        _ecc(reader, False, aggregate, "ecc(aggregate, corrected)"),
        _ecc(reader, True, aggregate, "ecc(aggregate, uncorrected)"),
    )
    nvlink = _nvlink(reader) if not reader.lost else {}
    if reader.lost:
        reader.unavailable.append("the GPU is lost (fell off the bus)")
    return HealthCounters(
        index=index,
        bus_id=bus,
        retired_pages_sbe=len(sbe) if sbe is not None else None,
        retired_pages_dbe=len(dbe) if dbe is not None else None,
        retired_pages_pending=(
            retired_pending == pynvml.NVML_FEATURE_ENABLED if retired_pending is not None else None
        ),
        remapped_rows_correctable=correctable,
        remapped_rows_uncorrectable=uncorrectable,
        remapped_rows_pending=bool(pending) if pending is not None else None,
        remapped_rows_failure=bool(failure) if failure is not None else None,
        pcie_replays=int(replays) if replays is not None else None,
        ecc_volatile_corrected=ecc[0],
        ecc_volatile_uncorrected=ecc[1],
        ecc_aggregate_corrected=ecc[2],
        ecc_aggregate_uncorrected=ecc[3],
        clock_event_reasons=tuple(n for bit, n in CLOCK_EVENT_NAMES if int(reasons or 0) & bit),
        violation_us=tuple(violations),
        nvlink_replay_errors=nvlink.get("nvlink_replay_errors"),
        nvlink_recovery_errors=nvlink.get("nvlink_recovery_errors"),
        nvlink_crc_flit_errors=nvlink.get("nvlink_crc_flit_errors"),
        nvlink_crc_data_errors=nvlink.get("nvlink_crc_data_errors"),
        source="nvml",
        unavailable=tuple(reader.unavailable),
    )


def read_nvml_counters() -> list[HealthCounters]:
    """Every GPU's counters; NvmlUnavailable when NVML does not start here."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        raise NvmlUnavailable(f"NVML unavailable: {error}") from None
    try:
        count = pynvml.nvmlDeviceGetCount()
        return [counters_for(i, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
    except pynvml.NVMLError as error:
        raise NvmlUnavailable(f"NVML: {error}") from None
    finally:
        pynvml.nvmlShutdown()
