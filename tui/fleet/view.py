"""What the Fleet pane shows about rows, decided once: state word, filter, sort, summary line."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tui.fleet.model import FleetRow

STATES = (
    "unreachable", "slow", "stale", "failed", "stalled", "degraded", "loading", "serving",
    "stopped", "unknown",
)  # fmt: skip


def is_stale(row: FleetRow) -> bool:
    """A Prometheus row some of whose scrapes fail: its figures are old or missing."""
    return row.source == "prometheus" and bool(row.error) and str(row.error).startswith("stale")


def host_state(row: FleetRow) -> str:
    """One word for the row: unreachable/slow/stale, failed, stalled, loading, serving,
    stopped, unknown; a deployment's group row with a member down: degraded."""
    if row.members_down:
        return "degraded"
    if not row.reachable:
        return "slow" if row.error and "no answer for" in row.error else "unreachable"
    if is_stale(row):
        return "stale"
    if row.phase == "failed" or row.unit_state == "failed":
        return "failed"
    if row.progress == "stalled":  # /health may well answer: the verdict says more
        return "stalled"
    if row.phase in ("starting", "weights", "compile", "kv_cache", "cuda_graphs"):
        return "loading"
    if row.health_ok or row.phase == "serving":
        return "serving"
    if row.unit_state in ("inactive", "deactivating") or row.phase == "stopped":
        return "stopped"
    return "unknown"


def matches(row: FleetRow, text: str) -> bool:
    """The `/` filter: every word must appear in the name, label, route or state."""
    words = (row.host, row.label, row.route, host_state(row), row.source)
    haystack = " ".join((*words, row.phase or "", row.unit_state or "")).lower()
    return all(word in haystack for word in text.lower().split())


# Sort keys by column id; None sorts last whatever the direction.
SORT_KEYS: dict[str, Callable[[FleetRow], Any]] = {
    "host": lambda r: r.host,
    "state": lambda r: STATES.index(host_state(r)),
    "unit": lambda r: r.unit_state,
    "phase": lambda r: r.phase,
    "load": lambda r: r.eta_s,
    "ready": lambda r: r.health_ok,
    "progress": lambda r: r.progress,
    "reqs": lambda r: r.running,
    "kv": lambda r: r.kv_pct,
    "toks": lambda r: r.gen_tok_s,
    "gpus": lambda r: r.gpu_count,
    "mem": lambda r: r.gpu_mem_used_bytes,
    "fullest": lambda r: r.gpu_mem_used_pct_max,
    "util": lambda r: r.gpu_util_pct_max,
    "temp": lambda r: r.temp_c_max,
    "power": lambda r: r.power_w,
    "left": lambda r: r.leftovers,
    "alerts": lambda r: len(r.alerts),
    "src": lambda r: r.source,
    "age": lambda r: r.sample_age_s,
}


def sorted_rows(rows: Sequence[FleetRow], column: str, descending: bool) -> list[FleetRow]:
    key = SORT_KEYS.get(column, SORT_KEYS["host"])
    known = [row for row in rows if key(row) is not None]
    unknown = [row for row in rows if key(row) is None]
    return sorted(known, key=key, reverse=descending) + unknown


_SUMMARY_ORDER = (
    "serving",
    "loading",
    "failed",
    "stopped",
    "unknown",
    "stale",
    "slow",
    "unreachable",
)
_SHORT = {
    "serving": "srv",
    "loading": "load",
    "failed": "fail",
    "stopped": "stop",
    "unknown": "?",
    "unreachable": "down",
}


@dataclass(frozen=True, slots=True)
class FleetSummary:
    hosts: int
    counts: dict[str, int]
    gpus: int
    gen_tok_s: float

    @property
    def up(self) -> int:
        return self.hosts - self.counts.get("unreachable", 0) - self.counts.get("slow", 0)

    def line(self, compact: bool = False) -> str:
        """`7/8 up: 3 serving, 2 loading, 1 failed, 1 unreachable | 38 GPUs | 1166 tok/s`."""
        words = _SHORT if compact else {}
        parts = [
            f"{self.counts[state]} {words.get(state, state)}"
            for state in _SUMMARY_ORDER
            if self.counts.get(state)
        ]
        return (
            f"{self.up}/{self.hosts} up: {', '.join(parts)} | {self.gpus} GPUs | "
            f"{self.gen_tok_s:.0f} tok/s"
        )


def summarize(rows: Sequence[FleetRow]) -> FleetSummary:
    counts: dict[str, int] = {}
    for row in rows:
        state = host_state(row)
        counts[state] = counts.get(state, 0) + 1
    return FleetSummary(
        hosts=len(rows),
        counts=counts,
        gpus=sum(row.gpu_count or 0 for row in rows),
        gen_tok_s=sum(row.gen_tok_s or 0.0 for row in rows),
    )
