"""Signal values from the sources' snapshots, in the shape AlertEngine.observe takes."""

from __future__ import annotations

from tui.alerts.engine import Signals
from tui.gpu.model import GpuBoxSnapshot
from tui.serving.metrics import ServerMetrics
from tui.serving.progress.model import ProgressVerdict
from tui.serving.unit.service import UnitState

GIB = 1024**3
# An XID counts towards its GPU's signals this long; the alert resolves after it.
XID_WINDOW_S = 600.0
IDLE_HELD_BYTES = GIB


def gpu_signals(snapshot: GpuBoxSnapshot) -> Signals:
    if not snapshot.available:
        return {}
    out: dict[str, dict[int | None, float]] = {
        "gpu.temperature_c": {},
        "gpu.memory_used_pct": {},
        "gpu.utilization_pct": {},
        "gpu.power_w": {},
        "gpu.idle_allocated": {},
        "gpu.lost": {},
    }
    for sample in snapshot.samples:
        index = sample.index
        out["gpu.lost"][index] = 1.0 if sample.lost else 0.0
        if sample.temperature_c is not None:
            out["gpu.temperature_c"][index] = sample.temperature_c
        if sample.power_w is not None:
            out["gpu.power_w"][index] = sample.power_w
        if sample.utilization_gpu_pct is not None:
            out["gpu.utilization_pct"][index] = sample.utilization_gpu_pct
        if sample.memory_used_bytes is not None and sample.memory_total_bytes:
            out["gpu.memory_used_pct"][index] = (
                100.0 * sample.memory_used_bytes / sample.memory_total_bytes
            )
            if sample.utilization_gpu_pct is not None:
                held = sample.memory_used_bytes > IDLE_HELD_BYTES
                out["gpu.idle_allocated"][index] = (
                    1.0 if held and sample.utilization_gpu_pct == 0 else 0.0
                )
    return out


def metrics_signals(metrics: ServerMetrics) -> Signals:
    out: dict[str, dict[int | None, float]] = {}
    if metrics.kv_cache_usage_pct is not None:
        out["engine.kv_cache_usage_pct"] = {None: metrics.kv_cache_usage_pct}
    if metrics.waiting_reqs is not None:
        out["engine.waiting_reqs"] = {None: float(metrics.waiting_reqs)}
    if metrics.running_reqs is not None:
        out["engine.running_reqs"] = {None: float(metrics.running_reqs)}
    return out


def progress_signals(verdict: ProgressVerdict) -> Signals:
    """1 while stalled, 0 otherwise; nothing while unknown (the alert neither fires nor ends)."""
    if verdict.state == "unknown":
        return {}
    return {"engine.stalled": {None: 1.0 if verdict.state == "stalled" else 0.0}}


def unit_signals(state: UnitState, leftovers: int | None) -> Signals:
    failed = state.active_state == "failed" or state.sub_state == "auto-restart"
    out: dict[str, dict[int | None, float]] = {"unit.failed": {None: 1.0 if failed else 0.0}}
    if leftovers is not None:
        inactive = state.active_state in ("inactive", "failed")
        out["procs.leftovers_while_inactive"] = {None: float(leftovers) if inactive else 0.0}
    return out


def readiness_signals(was_ready_ever: bool, ready_now: bool) -> Signals:
    return {"engine.ready_lost": {None: 1.0 if was_ready_ever and not ready_now else 0.0}}


def xid_signals(xids: list[tuple[float, int, bool]], gpus: list[int], now_s: float) -> Signals:
    """Per GPU, the XIDs of the last XID_WINDOW_S: (time, GPU, needs a reset or more).

    Every GPU in `gpus` gets a value (0 when quiet), so a firing alert resolves once
    its XIDs are older than the window.
    """
    recent: dict[int | None, float] = dict.fromkeys(gpus, 0.0)
    critical: dict[int | None, float] = dict.fromkeys(gpus, 0.0)
    for at_s, gpu, crit in xids:
        if now_s - at_s <= XID_WINDOW_S:
            recent[gpu] = recent.get(gpu, 0.0) + 1
            critical[gpu] = critical.get(gpu, 0.0) + (1 if crit else 0)
        else:
            recent.setdefault(gpu, 0.0)
            critical.setdefault(gpu, 0.0)
    return {"gpu.xid_recent": recent, "gpu.xid_critical_recent": critical}
