"""Incidents for the summary: kills of leftover GPU processes, service actions and stalls, from the audit log.

Records are read as written by tui.procs.kill and tui.serving.unit.service; anything else
in the log (or a record missing a field) is skipped, never a crash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tui.core.formatting import gib
from tui.summary.inputs import Incident

KILL_EVENTS = ("kill-request", "kill-outcome", "kill-refused")
SERVICE_EVENTS = (
    "service.request",
    "service.outcome",
    "service.refused",
    "service.restart-loop",
)
# tui.serving.progress.incident; a stack dump is an incident while a stall is open
STALL_EVENTS = ("engine.stalled", "engine.stall-ended", "engine.stacks")
MAX_INCIDENTS = 20


def _targets(record: Mapping[str, Any]) -> str:
    parts = []
    for target in record.get("targets") or ():
        if not isinstance(target, Mapping):
            continue
        memory = target.get("gpu_memory_bytes")
        held = f", {gib(memory)}" if isinstance(memory, int | float) and memory else ""
        command = str(target.get("command") or "?")[:60]
        klass = target.get("class")
        parts.append(f"pid {target.get('pid')} {klass + ' ' if klass else ''}({command}{held})")
    return "; ".join(parts) or "no targets"


def _text(record: Mapping[str, Any]) -> str | None:
    event = record.get("event")
    if event == "kill-request":
        return f"{record.get('action', 'kill')} requested: {_targets(record)}"
    if event == "kill-refused":
        return (
            f"{record.get('action', 'kill')} refused ({record.get('reason')}): {_targets(record)}"
        )
    if event == "kill-outcome":
        return str(record.get("summary") or "kill finished")
    if event == "engine.stalled":
        evidence = "; ".join(str(line) for line in record.get("evidence") or ())
        return f"engine stalled ({record.get('kind')}): {evidence[:300]}"
    if event == "engine.stacks":
        return f"engine stacks: {str(record.get('summary'))[:300]} (saved to {record.get('file')})"
    if event == "engine.stall-ended":
        return f"engine {record.get('state')} again after a {record.get('stalled_s')} s stall"
    if event in SERVICE_EVENTS:
        verb, unit = record.get("action", "?"), record.get("unit", "?")
        if event == "service.request":
            return f"{verb} {unit} requested"
        if event == "service.restart-loop":
            return (
                f"{unit} restart loop: {record.get('restarts')} restarts, failing on "
                f"{record.get('cause')}: {str(record.get('evidence', ''))[:100]}"
            )
        if event == "service.refused":
            return f"{verb} {unit} refused: {record.get('reason')}"
        result = (
            "ok"
            if record.get("ok")
            else f"failed ({record.get('error') or record.get('exit_status')})"
        )
        return f"{verb} {unit}: {result}"
    return None


def incidents_from_audit(
    records: Iterable[Mapping[str, Any]], host_label: str, limit: int = MAX_INCIDENTS
) -> tuple[Incident, ...]:
    """The newest `limit` kill and service records of one host, oldest first."""
    found: list[Incident] = []
    stall_open = False  # a dump outside a stall (`servedeck stacks` on a healthy engine) is none
    for record in records:
        if record.get("host") != host_label:
            continue
        event = record.get("event")
        if event not in KILL_EVENTS + SERVICE_EVENTS + STALL_EVENTS:
            continue
        if event in STALL_EVENTS[:2]:
            stall_open = event == "engine.stalled"
        elif event == "engine.stacks" and not (stall_open or record.get("stalled")):
            continue
        text = _text(record)
        if text:
            found.append(
                Incident(str(record.get("time", "?")), str(record["event"]), host_label, text)
            )
    return tuple(found[-limit:])
