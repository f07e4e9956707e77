"""The GPU table's health mark: one letter per GPU for the worst kind of trouble.

The table has room for one character beside the GPU number, so the kinds are
ranked (an XID is the loudest, a throttle the quietest) and the worst one is
shown, coloured by the GPU's badge (warn/crit); the reasons go to the detail line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tui.health.findings import WARN

if TYPE_CHECKING:  # a report exists only once the health checks ran: not at start
    from tui.health.report import HealthReport
    from tui.health.xid.decode import XidEvent

# An XID older than this no longer marks the GPU (it stays on the Health pane).
XID_RECENT_S = 24 * 3600.0
# Kind -> the letter shown, loudest first.
CODES = (
    ("xid", "X"),  # an XID in the kernel log
    ("remap", "R"),  # row remap / page retirement pending, or remapping failed
    ("ecc", "E"),  # uncorrectable ECC errors since the last reset
    ("nvlink", "L"),  # NVLink replay/recovery/CRC errors
    ("pcie", "P"),  # PCIe replays climbing
    ("throttle", "T"),  # hardware/thermal slowdown active
)
_SLOWDOWN_WORDS = ("HW Slowdown", "HW Thermal", "HW Power Brake", "SW Thermal")


@dataclass(frozen=True, slots=True)
class GpuBadge:
    """What the GPU table draws for one GPU: severity, letters (worst first), reasons."""

    index: int
    severity: str  # ok | warn | crit
    codes: str  # e.g. "XR": an XID and a pending row remap; "" when healthy
    reasons: tuple[str, ...] = ()

    @property
    def mark(self) -> str:
        return self.codes[:1]


def _recent(events: tuple[XidEvent, ...], now_s: float) -> bool:
    """Any event of this boot without a time (dmesg), or within XID_RECENT_S."""
    return any(e.timestamp_s is None or now_s - e.timestamp_s <= XID_RECENT_S for e in events)


def badges(report: HealthReport | None, now_s: float | None = None) -> dict[int, GpuBadge]:
    """Per GPU index, its badge; an empty dict when there is no report."""
    if report is None:
        return {}
    from tui.health.report import OK, REPLAY_RATE_WARN_PER_S

    now_s = time.time() if now_s is None else now_s
    out: dict[int, GpuBadge] = {}
    for gpu in report.gpus:
        kinds: set[str] = set()
        if _recent(gpu.events, now_s):
            kinds.add("xid")
        c = gpu.counters
        if c is not None:
            if c.remapped_rows_pending or c.retired_pages_pending or c.remapped_rows_failure:
                kinds.add("remap")
            if c.ecc_volatile_uncorrected:
                kinds.add("ecc")
            if c.nvlink_errors:
                kinds.add("nvlink")
            if any(r.startswith(_SLOWDOWN_WORDS) for r in c.clock_event_reasons):
                kinds.add("throttle")
        if (gpu.replay_rate_per_s or 0.0) >= REPLAY_RATE_WARN_PER_S:
            kinds.add("pcie")
        codes = "".join(letter for kind, letter in CODES if kind in kinds)
        severity = (gpu.badge if gpu.badge != OK else WARN) if codes else OK
        out[gpu.index] = GpuBadge(gpu.index, severity, codes, gpu.reasons)
    return out
