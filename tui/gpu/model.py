"""GPU snapshots: the one shape every GPU source (NVML, nvidia-smi, simulator) yields.

A value of None means "not available on this GPU" (NVML NOT_SUPPORTED, `[N/A]`)
and is drawn as n/a; it never means zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class GpuProcessUsage:
    """A process holding memory on one GPU, as the driver reports it.

    The pid is a hint: inside containers it may be a host or namespace pid,
    so anything acting on it re-checks /proc first (docs/DESIGN.md section 7).
    """

    pid: int
    gpu_index: int
    used_memory_bytes: int | None
    process_name: str = ""
    kind: str = "compute"  # compute | graphics
    # Filled from /proc when the GPU is on this machine; None when not known.
    user: str | None = None
    started_at_s: float | None = None  # wall clock, seconds since the epoch
    # The process's share of the GPU's SM and memory-controller time (NVML's per-process
    # utilization, averaged over the samples since the last read); None when not known:
    # the GPU or the source does not report it, or no read covered the process yet.
    sm_util_percent: float | None = None
    memory_util_percent: float | None = None


@dataclass(frozen=True, slots=True)
class GpuStatic:
    """Facts that do not change while the driver is loaded: read once."""

    index: int
    name: str
    uuid: str
    bus_id: str
    memory_total_bytes: int | None
    compute_capability: str | None = None
    numa_node: int | None = None
    pcie_max_gen: int | None = None
    pcie_max_width: int | None = None
    power_limit_w: float | None = None
    cpu_affinity: str | None = None  # like `nvidia-smi topo -m`: "0-47,96-143"
    nvlink_active_links: int | None = None  # None: no NVLink (or not reported)


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU at one instant. `lost` marks a GPU that fell off the bus."""

    index: int
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_tx_bytes_per_s: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    ecc_uncorrected_errors: int | None = None
    throttle_reasons: tuple[str, ...] = ()
    processes: tuple[GpuProcessUsage, ...] = ()
    lost: bool = False
    error: str | None = None
    # What the driver keeps for itself (NVML v2), not counted in memory_used_bytes.
    memory_reserved_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class GpuBoxSnapshot:
    """Every GPU of one host at one tick, plus the host-wide facts.

    `available` is False when there is no driver or no GPU; `error` says why,
    in one line, and the rest of the app keeps working.
    """

    source: str  # "nvml" | "nvidia-smi" | "simulated"
    taken_at_s: float  # wall clock, seconds since the epoch
    statics: tuple[GpuStatic, ...] = ()
    samples: tuple[GpuSample, ...] = ()
    driver_version: str | None = None
    cuda_version: str | None = None
    # topology[i][j] like `nvidia-smi topo -m`: "X", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS"
    topology: tuple[tuple[str, ...], ...] = ()
    available: bool = True
    error: str | None = None
    simulated: bool = False

    @property
    def gpu_count(self) -> int:
        return len(self.samples)

    def processes(self) -> tuple[GpuProcessUsage, ...]:
        return tuple(proc for sample in self.samples for proc in sample.processes)


class GpuSource(Protocol):
    """Anything that can be asked for the current GpuBoxSnapshot.

    `sample()` must not block the event loop: blocking driver calls run in a thread.
    """

    name: str

    async def sample(self) -> GpuBoxSnapshot: ...

    async def aclose(self) -> None: ...


def total_memory_bytes(samples: Sequence[GpuSample]) -> tuple[int, int]:
    """Used and total bytes over the GPUs that report memory."""
    used = sum(s.memory_used_bytes or 0 for s in samples if s.memory_total_bytes)
    total = sum(s.memory_total_bytes or 0 for s in samples if s.memory_total_bytes)
    return used, total


# What each NVML clock-event reason (tui.gpu.nvml's names) is called on the Deck.
THROTTLE_LABELS: dict[str, str] = {
    "sw_power_cap": "power cap",
    "hw_slowdown": "hw slowdown",
    "sw_thermal": "thermal",
    "hw_thermal": "hw thermal",
    "hw_power_brake": "power brake",
    "app_clocks": "app clocks",
    "sync_boost": "sync boost",
    "display_clocks": "display clocks",
}


def throttle_labels(sample: GpuSample) -> tuple[str, ...]:
    """The clock-event reasons holding a GPU's clocks down, in the Deck's words.

    NVML's idle reason is never in `throttle_reasons` (an idle GPU is not slowed), so
    any reason there is one the operator can act on; () when none is active.
    """
    if sample.lost:
        return ()
    return reason_labels(sample.throttle_reasons)


def reason_labels(reasons: tuple[str, ...]) -> tuple[str, ...]:
    """NVML's clock-event reason names in the Deck's words."""
    return tuple(THROTTLE_LABELS.get(name, name) for name in reasons)


def slowdown_text(sample: GpuSample) -> str | None:
    """ "SM 1140 MHz: power cap" while a GPU is slowed; None when it is not."""
    labels = throttle_labels(sample)
    if not labels:
        return None
    clock = "?" if sample.sm_clock_mhz is None else str(sample.sm_clock_mhz)
    return f"SM {clock} MHz: {', '.join(labels)}"
