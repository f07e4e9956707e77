"""What the read-only MCP tools answer, each from the builder its CLI command uses.

Every function takes the server's one open Deck (the console's view of the profile) and
returns the typed result of tui.mcp.results; none changes the host. Bounds are checked
by the tool's argument schema (tui.mcp.server) before any of these runs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from tui.bench.capacity.history import searches_for_host
from tui.bench.history import runs_for_host
from tui.commands.gpus_cmd import snapshot_dict
from tui.commands.health_cmd import health_verdict
from tui.commands.plan_cmd import deck_plan, plan_settings
from tui.commands.procs_cmd import current_listing
from tui.commands.status import status_report
from tui.commands.summary_cmd import deck_summary
from tui.commands.timeline_cmd import read_timeline
from tui.core.errors import ServedeckError, UsageError
from tui.deck import Deck
from tui.fleet.actions import read_identity
from tui.health.findings import CRIT, WARN
from tui.logs.classify import strip_ansi
from tui.logs.line import LogLine
from tui.mcp.results import (
    BenchHistoryResult,
    CapacityHistoryResult,
    GpusResult,
    HandoffResult,
    HealthResult,
    HostIdentityResult,
    LogSearchResult,
    LogTailResult,
    PlanResult,
    ProcessEntry,
    ProcessesResult,
    StatusResult,
    TimelineResult,
)
from tui.plan.render import plan_json
from tui.procs.kill import leftovers
from tui.procs.model import GpuProcess
from tui.record.model import KINDS
from tui.record.where import recording_path


async def identity_of(deck: Deck) -> HostIdentityResult:
    """The host's name and boot id, as the fleet's actions read and re-check them."""
    identity = await read_identity(deck)
    return {"node": identity.node, "boot_id": identity.boot_id}


async def status_result(deck: Deck) -> StatusResult:
    report = await status_report(deck)
    identity: HostIdentityResult | None = None
    try:
        identity = await identity_of(deck)
    except ServedeckError as error:
        report["errors"].append(str(error))
    load = report.get("load") or {}
    return {
        "profile": report["profile"],
        "host": report["host"],
        "host_reachable": report["host_reachable"],
        "identity": identity,
        "unit_state": (report.get("unit") or {}).get("active_state"),
        "load_phase": load.get("phase"),
        "load_eta_s": load.get("eta_s"),
        "load_progress_pct": load.get("shard_pct"),
        "ready": bool(report["readiness"].get("health_ok")),
        "serving": report["serving"],
        "errors": list(report["errors"]),
        "report": report,
    }


async def gpus_result(deck: Deck) -> GpusResult:
    snapshot = await (await deck.gpu_source()).sample()
    return {
        "available": snapshot.available,
        "gpu_count": snapshot.gpu_count,
        "error": snapshot.error,
        "snapshot": snapshot_dict(snapshot),
    }


def _entry(proc: GpuProcess) -> ProcessEntry:
    return {
        "pid": proc.pid,
        "start_ticks": proc.identity.start_ticks,
        "boot_id": proc.identity.boot_id,
        "klass": proc.klass,
        "reason": proc.reason,
        "user": proc.user,
        "start_time_s": proc.start_time_s,
        "gpu_memory_bytes": proc.gpu_memory_bytes,
        "gpu_indices": list(proc.gpu_indices),
        "command": proc.command,
    }


async def processes_result(deck: Deck) -> ProcessesResult:
    listing = await current_listing(deck)
    return {
        "host": listing.host_label,
        "boot_id": listing.boot_id,
        "taken_at_s": listing.taken_at_s,
        "processes": [_entry(proc) for proc in listing.processes],
        "leftover_pids": [proc.pid for proc in leftovers(listing.processes)],
        "notes": list(listing.notes),
    }


def _log(deck: Deck, lines: int) -> AsyncIterator[LogLine]:
    """The log's last lines, once, redacted where they enter (Deck.log_batches)."""
    source = deck.replay_log_lines(initial_lines=lines)
    if source is None:
        raise UsageError(f"profile {deck.profile.name!r}: set service.unit or service.log_file")
    return source


async def log_tail_result(deck: Deck, lines: int) -> LogTailResult:
    texts = [strip_ansi(line.text) async for line in _log(deck, lines)]
    return {"source": deck.log_label(), "lines": texts[-lines:]}


async def log_search_result(
    deck: Deck, pattern: str, limit: int, scan_lines: int
) -> LogSearchResult:
    """The newest `limit` of the last `scan_lines` lines holding `pattern` (any case).

    A fixed string, never a regular expression: a search's cost stays linear in the lines
    it reads, whatever an agent sends."""
    wanted = pattern.casefold()
    matches, scanned = [], 0
    async for line in _log(deck, scan_lines):
        scanned += 1
        text = strip_ansi(line.text)
        if wanted in text.casefold():
            matches.append(text)
    return {
        "source": deck.log_label(),
        "pattern": pattern,
        "scanned_lines": scanned,
        "matches": matches[-limit:],
        "truncated": len(matches) > limit,
    }


def timeline_result(deck: Deck, since: str | None, kind: str | None, limit: int) -> TimelineResult:
    if kind is not None and kind not in KINDS:
        raise UsageError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    db = recording_path(deck.profile)
    if not db.exists():  # unknown, not "nothing happened"
        raise ServedeckError(
            f"{db}: no recording of this host yet (the console or `servedeck record` writes it)"
        )
    events, note = read_timeline(db, since, kinds=(kind,) if kind else ())
    return {
        "recording": str(db),
        "events": [event.as_json() for event in events[-limit:]],
        "truncated": len(events) > limit,
        "note": note,
    }


async def health_result(deck: Deck) -> HealthResult:
    hardware = await deck.hardware_health()
    interconnect: dict[str, Any]
    try:
        report = await deck.interconnect()
    except ServedeckError as error:  # the hardware report still answers
        interconnect, problems = {"error": str(error)}, None
    else:
        interconnect = report.as_dict()
        problems = sum(1 for finding in report.findings if finding.severity in (CRIT, WARN))
        if not report.gpu_bus_ids and not problems:
            problems = None  # no GPU was looked at: unknown, not "no problem"
    return {
        "verdict": health_verdict(hardware),
        "hardware": hardware.as_dict(),
        "interconnect": interconnect,
        "interconnect_problems": problems,
    }


async def plan_result(
    deck: Deck,
    model_dir: str | None,
    gpu_memory_utilization: float,
    max_model_len: int | None,
    kv_cache_dtype: str,
) -> PlanResult:
    settings = plan_settings(
        deck.profile,
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len,
        kv_cache_dtype=kv_cache_dtype,
    )
    plan = await deck_plan(deck, settings, model_dir)
    return {"model": plan.model_name, "plan": json.loads(plan_json(plan))}


async def handoff_result(deck: Deck) -> HandoffResult:
    markdown, missing = await deck_summary(deck)
    return {"markdown": markdown, "missing": list(missing)}


def bench_history_result(deck: Deck, limit: int) -> BenchHistoryResult:
    runs = runs_for_host(deck.host_label, limit=limit)
    return {"host": deck.host_label, "runs": [run.to_dict() for run in runs]}


def capacity_history_result(deck: Deck, limit: int) -> CapacityHistoryResult:
    searches = list(reversed(searches_for_host(deck.host_label)))[:limit]
    return {"host": deck.host_label, "searches": searches}
