"""Per-GPU health: XID events and counters folded into one badge per GPU.

The badge is the worst of: the XID events seen (their table severity), a row
remap that failed (crit), a pending page retirement or row remap (warn: the GPU
needs a reset), volatile uncorrectable ECC errors, PCIe replays that keep
climbing, and hardware/thermal slowdown active right now.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.health.counters import HealthCounters
from tui.health.findings import CRIT, WARN
from tui.health.xid.decode import XidEvent

OK = "ok"
_RANK = {OK: 0, WARN: 1, CRIT: 2}
# Replays per second that mean a marginal link (a healthy one stays at 0).
REPLAY_RATE_WARN_PER_S = 1.0
_SLOWDOWNS = (
    "HW Slowdown",
    "HW Thermal Slowdown",
    "HW Power Brake Slowdown",
    "SW Thermal Slowdown",
)


@dataclass(frozen=True, slots=True)
class GpuHealth:
    index: int
    bus_id: str
    badge: str  # ok | warn | crit
    reasons: tuple[str, ...]
    events: tuple[XidEvent, ...] = ()
    counters: HealthCounters | None = None
    replay_rate_per_s: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "bus_id": self.bus_id,
            "badge": self.badge,
            "reasons": list(self.reasons),
            "events": [event.as_dict() for event in self.events],
            "counters": self.counters.as_dict() if self.counters else None,
            "replay_rate_per_s": self.replay_rate_per_s,
        }


@dataclass(frozen=True, slots=True)
class HealthReport:
    gpus: tuple[GpuHealth, ...]
    unmatched_events: tuple[XidEvent, ...] = ()  # bus ids no GPU answers to (fell off?)
    event_source: str = ""  # journal | dmesg | simulated | none
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        return {
            "gpus": [gpu.as_dict() for gpu in self.gpus],
            "unmatched_events": [event.as_dict() for event in self.unmatched_events],
            "event_source": self.event_source,
            "notes": list(self.notes),
        }


def _worst(a: str, b: str) -> str:
    return a if _RANK.get(a, 0) >= _RANK.get(b, 0) else b


def gpu_badge(
    counters: HealthCounters | None,
    events: tuple[XidEvent, ...],
    replay_rate_per_s: float | None = None,
) -> tuple[str, tuple[str, ...]]:
    """(badge, the reasons in a few words each)."""
    badge, reasons = OK, []
    for event in events:
        badge = _worst(badge, event.severity if event.severity in _RANK else WARN)
        reasons.append(f"XID {event.number_text} {event.name}: {event.action}")
    c = counters
    if c is not None:
        if c.remapped_rows_failure:
            badge = CRIT
            reasons.append("row remapping failed: RMA")
        if c.remapped_rows_pending or c.retired_pages_pending:
            badge = _worst(badge, WARN)
            reasons.append("row remap / page retirement pending: reset the GPU")
        if c.ecc_volatile_uncorrected:
            badge = _worst(badge, WARN)
            reasons.append(f"{c.ecc_volatile_uncorrected} uncorrectable ECC error(s) since reset")
        if c.nvlink_errors:
            badge = _worst(badge, WARN)
            reasons.append(f"{c.nvlink_errors} NVLink error(s) (replay/recovery/CRC) since reset")
        slow = [r for r in c.clock_event_reasons if r in _SLOWDOWNS]
        if slow:
            badge = _worst(badge, WARN)
            reasons.append(f"clocks held down: {', '.join(slow)}")
    if replay_rate_per_s is not None and replay_rate_per_s >= REPLAY_RATE_WARN_PER_S:
        badge = _worst(badge, WARN)
        reasons.append(f"PCIe replays climbing ({replay_rate_per_s:.1f}/s): check the link")
    return badge, tuple(reasons)


def replay_rate(
    before: HealthCounters | None, after: HealthCounters | None, seconds: float
) -> float | None:
    if before is None or after is None or seconds <= 0:
        return None
    if before.pcie_replays is None or after.pcie_replays is None:
        return None
    return max(after.pcie_replays - before.pcie_replays, 0) / seconds


def build_report(
    counters: list[HealthCounters],
    events: list[XidEvent],
    event_source: str,
    notes: list[str] | None = None,
    replay_rates: dict[int, float] | None = None,
) -> HealthReport:
    """One GpuHealth per GPU the counters name; events on no known GPU kept apart."""
    gpus = []
    for c in counters:
        mine = tuple(e for e in events if e.gpu_index == c.index)
        rate = (replay_rates or {}).get(c.index)
        badge, reasons = gpu_badge(c, mine, rate)
        gpus.append(GpuHealth(c.index, c.bus_id, badge, reasons, mine, c, rate))
    known = {c.index for c in counters}
    unmatched = tuple(e for e in events if e.gpu_index is None or e.gpu_index not in known)
    return HealthReport(tuple(gpus), unmatched, event_source, tuple(notes or ()))


def with_events(report: HealthReport, new_events: list[XidEvent]) -> HealthReport:
    """The report with events followed since it was read, badges recomputed.

    An event already in the report (same kernel line and time, or same journal cursor)
    is not added twice: the follow may start before the one-off read ends.
    """
    old = [e for gpu in report.gpus for e in gpu.events] + list(report.unmatched_events)
    seen = {(e.cursor or e.text, e.timestamp_s) for e in old}
    fresh = [e for e in new_events if (e.cursor or e.text, e.timestamp_s) not in seen]
    if not fresh:
        return report
    counters = [gpu.counters for gpu in report.gpus if gpu.counters is not None]
    rates = {g.index: g.replay_rate_per_s for g in report.gpus if g.replay_rate_per_s is not None}
    return build_report(counters, old + fresh, report.event_source, list(report.notes), rates)
