"""Turning one host's source snapshots into its FleetRow (pure: no I/O, easy to test)."""

from __future__ import annotations

import time
from dataclasses import replace

from tui.fleet.model import FleetRow
from tui.gpu.model import GpuBoxSnapshot, total_memory_bytes
from tui.serving.load.tracker import LoadProgress
from tui.serving.metrics import ServerMetrics
from tui.serving.progress.model import ProgressVerdict
from tui.serving.readiness import Readiness
from tui.serving.unit.service import UnitState

HOT_GPU_C = 85.0
FULL_GPU_PCT = 98.0


def _max(values: list[float]) -> float | None:
    return max(values) if values else None


def gpu_fields(snapshot: GpuBoxSnapshot | None) -> dict[str, object]:
    """Sums and worst values over the GPUs that report them; an empty dict without GPUs."""
    if snapshot is None or not snapshot.available:
        return {}
    samples = [s for s in snapshot.samples if not s.lost]
    used, total = total_memory_bytes(samples)
    mem_pcts = [
        100.0 * s.memory_used_bytes / s.memory_total_bytes
        for s in samples
        if s.memory_used_bytes is not None and s.memory_total_bytes
    ]
    utils = [s.utilization_gpu_pct for s in samples if s.utilization_gpu_pct is not None]
    temps = [s.temperature_c for s in samples if s.temperature_c is not None]
    powers = [s.power_w for s in samples if s.power_w is not None]
    return {
        "gpu_count": len(snapshot.samples),
        "gpu_mem_used_bytes": used if total else None,
        "gpu_mem_total_bytes": total or None,
        "gpu_mem_used_pct_max": _max(mem_pcts),
        "gpu_util_pct_sum": sum(utils) if utils else None,
        "gpu_util_pct_max": _max(utils),
        "temp_c_max": _max(temps),
        "power_w": sum(powers) if powers else None,
    }


def alerts_for(row: FleetRow, lost_gpus: int = 0) -> tuple[str, ...]:
    """The few fleet-level alerts a row shows: failed load, a stall, hot or lost GPU, leftovers."""
    found = []
    if row.phase == "failed" or row.unit_state == "failed":
        found.append("load failed" if row.phase == "failed" else "unit failed")
    if row.progress == "stalled":
        found.append(f"stalled: {row.progress_kind}" if row.progress_kind else "stalled")
    if row.temp_c_max is not None and row.temp_c_max >= HOT_GPU_C:
        found.append(f"GPU hot {row.temp_c_max:.0f}C")
    if lost_gpus:
        found.append(f"{lost_gpus} GPU lost")
    if row.leftovers:
        found.append(f"{row.leftovers} leftover(s)")
    return tuple(found)


def build_row(
    base: FleetRow,
    *,
    unit: UnitState | None = None,
    progress: LoadProgress | None = None,
    readiness: Readiness | None = None,
    metrics: ServerMetrics | None = None,
    gpus: GpuBoxSnapshot | None = None,
    leftovers: int | None = None,
    errors: tuple[str, ...] = (),
    verdict: ProgressVerdict | None = None,
) -> FleetRow:
    """One row from whatever the sources returned; a missing part stays None (n/a)."""
    changes: dict[str, object] = dict(gpu_fields(gpus))
    if unit is not None:
        changes["unit_state"] = unit.active_state
    if progress is not None:
        phase = str(progress.phase)
        if unit is not None and unit.exists and not unit.is_active and phase != "failed":
            phase = "stopped"  # the log's last load says serving, but the unit is down
        changes.update(
            phase=phase,
            shards_done=progress.shards_done,
            shards_total=progress.shards_total,
            eta_s=progress.eta_s if progress.is_loading and phase != "stopped" else None,
        )
    if readiness is not None and readiness.checked:
        changes["health_ok"] = readiness.health_ok
    elif readiness is not None:
        changes["health_ok"] = False  # still loading: not answering yet, by design
    if metrics is not None:
        changes.update(
            running=metrics.running_reqs,
            waiting=metrics.waiting_reqs,
            kv_pct=metrics.kv_cache_usage_pct,
            gen_tok_s=metrics.generation_tokens_per_s,
        )
    if verdict is not None:
        changes.update(progress=verdict.state, progress_kind=verdict.kind_text)
    changes["leftovers"] = leftovers
    changes["error"] = "; ".join(errors) or None
    changes["taken_at_s"] = time.time()
    row = replace(base, **changes)  # type: ignore[arg-type]
    lost = sum(1 for s in gpus.samples if s.lost) if gpus is not None else 0
    return replace(row, alerts=alerts_for(row, lost))
