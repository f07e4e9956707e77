"""Plain-text and JSON renderings of listings and kill reports (CLI output, no Textual)."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from tui.core.formatting import duration_compact, gib
from tui.procs.model import GpuProcess, KillReport, ProcListing


def format_start(start_time_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start_time_s))


def gpu_column(proc: GpuProcess) -> str:
    return ",".join(str(index) for index in proc.gpu_indices) or "-"


def sm_column(proc: GpuProcess) -> str:
    """Its SM share: "-" holding no GPU, "?" where a GPU does not say (never 0)."""
    if not proc.gpus:
        return "-"
    percent = proc.sm_util_percent
    return "?" if percent is None else f"{percent:.0f}"


def listing_lines(listing: ProcListing, now_s: float | None = None) -> list[str]:
    now_s = time.time() if now_s is None else now_s
    header = (
        f"{'CLASS':<9} {'PID':>7} {'USER':<10} {'GPU':<7} {'MEMORY':>10} {'SM%':>4} "
        f"{'AGE':>7}  COMMAND"
    )
    lines = [header]
    for proc in listing.processes:
        age = duration_compact(proc.age_s(now_s), always_minutes=True)
        lines.append(
            f"{proc.klass:<9} {proc.pid:>7} {proc.user[:10]:<10} {gpu_column(proc):<7} "
            f"{gib(proc.gpu_memory_bytes):>10} {sm_column(proc):>4} {age:>7}  "
            f"{proc.command[:120]}"
        )
        if proc.klass == "defunct":
            lines.append(f"{'':>18}parent {proc.ppid} must reap it: {proc.parent_command[:100]}")
    if not listing.processes:
        lines.append("(no process holds GPU memory)")
    lines.extend(f"note: {note}" for note in listing.notes)
    return lines


def target_lines(host_label: str, targets: list[GpuProcess]) -> list[str]:
    """What a confirmation shows for each target: host, pid, class, user, start, memory, command."""
    return [
        f"{host_label}  pid {proc.pid}  {proc.klass}  user {proc.user}  "
        f"started {format_start(proc.start_time_s)}  GPU memory {gib(proc.gpu_memory_bytes)}"
        f"\n    {proc.command[:200]}"
        for proc in targets
    ]


def report_lines(report: KillReport) -> list[str]:
    lines = []
    for outcome in report.outcomes:
        freed = outcome.freed_bytes
        freed_text = f", freed {gib(freed)}" if freed is not None else ""
        signals = f" [{' '.join(outcome.signals)}]" if outcome.signals else ""
        lines.append(
            f"pid {outcome.identity.pid}: {outcome.outcome}{signals}: {outcome.detail}{freed_text}"
        )
    lines.append(report.summary_line())
    return lines


def listing_json(listing: ProcListing) -> dict[str, Any]:
    data = asdict(listing)
    for raw, proc in zip(data["processes"], listing.processes, strict=True):
        raw["gpu_memory_bytes"] = proc.gpu_memory_bytes
        raw["sm_util_percent"] = proc.sm_util_percent
    return data
