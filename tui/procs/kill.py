"""Killing GPU processes safely: checks, the helper's pidfd kill, freed memory, audit.

Call from a worker thread or task, never the UI thread: a kill waits up to
`timeout_s` for SIGTERM to work before SIGKILL. Every request, refusal and
outcome is appended to the audit log, with commands redacted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.core.formatting import counted, gib
from tui.hosts.base import Host
from tui.procs.listing import ClassifyContext, GpuHints, usages_of
from tui.procs.model import (
    CONFIRM_CLASSES,
    OFFERED_CLASSES,
    GpuProcess,
    KillOutcome,
    KillReport,
)
from tui.procs.remote import run_helper

DEFAULT_TIMEOUT_S = 15.0
DEFAULT_KILL_WAIT_S = 5.0

Reread = Callable[[], Awaitable[GpuHints]]


class ReadOnlyError(ServedeckError):
    """A change was asked for with --read-only or a read-only profile."""

    exit_code = 3


def check_targets(
    targets: Sequence[GpuProcess], confirmed_foreign: Collection[int] = ()
) -> dict[int, str]:
    """Refusals known before anything runs on the host: pid -> reason."""
    refusals: dict[int, str] = {}
    for proc in targets:
        if proc.pid <= 1:
            refusals[proc.pid] = "refused: PID 1 is never signalled"
        elif proc.klass == "defunct":
            refusals[proc.pid] = f"refused: defunct; its parent {proc.ppid} must reap it"
        elif proc.klass in CONFIRM_CLASSES and proc.pid not in confirmed_foreign:
            refusals[proc.pid] = f"refused: {proc.klass} process without a typed confirmation"
        elif proc.klass not in (*OFFERED_CLASSES, "service", *CONFIRM_CLASSES):
            refusals[proc.pid] = f"refused: class {proc.klass}"
    return refusals


def refuse_before_asking(
    host_label: str,
    targets: Sequence[GpuProcess],
    *,
    read_only: bool,
    action: str,
    audit_path: Path | None = None,
) -> tuple[list[GpuProcess], dict[int, str]]:
    """The one refusal step before any dialog or prompt, for the CLI and the console alike.

    Read-only refuses everything (ReadOnlyError); pid 1 and defunct processes are
    refused whatever the operator would type, so no dialog ever offers them.
    Every refusal is audited. Returns (targets still to ask about, pid -> refusal).
    """
    if read_only:
        append_audit(
            "kill-refused",
            host_label,
            {"action": action, "reason": "read-only", "targets": _records(targets)},
            audit_path,
        )
        raise ReadOnlyError(f"{host_label}: read-only: killing processes is disabled")
    # Foreign and suspect processes are confirmed by typing their pid: not refused here.
    refused = check_targets(targets, confirmed_foreign={proc.pid for proc in targets})
    if refused:
        append_audit(
            "kill-refused",
            host_label,
            {
                "action": action,
                "reason": "; ".join(sorted(set(refused.values()))),
                "targets": _records([proc for proc in targets if proc.pid in refused]),
            },
            audit_path,
        )
    return [proc for proc in targets if proc.pid not in refused], refused


def _records(targets: Sequence[GpuProcess]) -> list[dict[str, Any]]:
    return [_target_record(proc) for proc in targets]


def _target_record(proc: GpuProcess) -> dict[str, Any]:
    return {
        "pid": proc.pid,
        "start_ticks": proc.identity.start_ticks,
        "boot_id": proc.identity.boot_id,
        "class": proc.klass,
        "user": proc.user,
        "start_time_s": proc.start_time_s,
        "gpu_memory_bytes": proc.gpu_memory_bytes,
        "command": proc.command,  # already redacted when listed
    }


def _memory_by_pid(gpu: GpuHints) -> dict[int, int]:
    memory: dict[int, int] = {}
    for usage in usages_of(gpu):
        memory[usage.pid] = memory.get(usage.pid, 0) + (usage.used_memory_bytes or 0)
    return memory


async def _memory_after(
    reread: Reread, targets: Sequence[GpuProcess], ended: set[int], release_wait_s: float
) -> dict[int, int] | None:
    """Re-read the GPUs until the ended targets' memory is gone (or the wait runs out)."""
    deadline = time.monotonic() + release_wait_s
    while True:
        snapshot = await reread()
        if snapshot is None:
            return None
        memory = _memory_by_pid(snapshot)
        holding = [p for p in targets if p.pid in ended and memory.get(p.hint_pid or p.pid)]
        if not holding or time.monotonic() >= deadline:
            return memory
        await asyncio.sleep(0.25)


async def kill_processes(
    host: Host,
    targets: Sequence[GpuProcess],
    context: ClassifyContext,
    *,
    read_only: bool,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    kill_wait_s: float = DEFAULT_KILL_WAIT_S,
    confirmed_foreign: Collection[int] = (),
    reread: Reread | None = None,
    release_wait_s: float = 10.0,
    action: str = "kill",
    audit_path: Path | None = None,
) -> KillReport:
    """SIGTERM, wait, SIGKILL each target after re-checking its identity; report what freed.

    `confirmed_foreign` holds the pids the operator typed to confirm foreign or suspect
    targets.
    `reread` returns a fresh GPU snapshot; without it freed memory is unknown.
    """
    records = [_target_record(proc) for proc in targets]
    if read_only:
        append_audit(
            "kill-refused",
            host.label,
            {"action": action, "reason": "read-only", "targets": records},
            audit_path,
        )
        raise ReadOnlyError(f"{host.label}: read-only: killing processes is disabled")
    append_audit(
        "kill-request",
        host.label,
        {"action": action, "timeout_s": timeout_s, "targets": records},
        audit_path,
    )
    refusals = check_targets(targets, confirmed_foreign)
    to_signal = [proc for proc in targets if proc.pid not in refusals]
    raw_results: dict[tuple[int, int], dict[str, Any]] = {}
    helper_error: str | None = None
    if to_signal:
        request = {
            "op": "kill",
            "targets": [
                {
                    "pid": proc.pid,
                    "start_ticks": proc.identity.start_ticks,
                    "boot_id": proc.identity.boot_id,
                    "klass": proc.klass,
                }
                for proc in to_signal
            ],
            "timeout_s": timeout_s,
            "kill_wait_s": kill_wait_s,
            "confirm_foreign": sorted(set(confirmed_foreign)),
            "console_pid": context.console_pid,
        }
        try:
            answer = await run_helper(host, request, timeout_s + kill_wait_s + 30.0)
        except ServedeckError as error:
            helper_error = str(error)
        else:
            for raw in answer["results"]:
                raw_results[(raw["pid"], raw["start_ticks"])] = raw
    ended = {
        pid
        for (pid, _ticks), raw in raw_results.items()
        if raw.get("outcome") in ("terminated", "killed")
    }
    after: dict[int, int] | None = None
    if reread is not None:
        after = await _memory_after(reread, to_signal, ended, release_wait_s)
    outcomes = []
    for proc in targets:
        raw = raw_results.get((proc.pid, proc.identity.start_ticks), {})
        if proc.pid in refusals:
            outcome, detail = "refused", refusals[proc.pid]
        elif helper_error:
            outcome, detail = "error", helper_error
        else:
            outcome, detail = raw.get("outcome", "error"), raw.get("detail", "no result")
        outcomes.append(
            KillOutcome(
                identity=proc.identity,
                outcome=outcome,
                detail=detail,
                signals=tuple(raw.get("signals", ())),
                method=raw.get("method"),
                gpu_memory_before_bytes=proc.gpu_memory_bytes,
                gpu_memory_after_bytes=(
                    after.get(proc.hint_pid or proc.pid, 0) if after is not None else None
                ),
            )
        )
    report = KillReport(host_label=host.label, outcomes=tuple(outcomes))
    append_audit(
        "kill-outcome",
        host.label,
        {
            "action": action,
            "summary": report.summary_line(),
            "freed_bytes": report.freed_bytes if after is not None else None,
            "outcomes": [_outcome_record(o) for o in outcomes],
        },
        audit_path,
    )
    return report


def _outcome_record(outcome: KillOutcome) -> dict[str, Any]:
    return {
        "pid": outcome.identity.pid,
        "start_ticks": outcome.identity.start_ticks,
        "outcome": outcome.outcome,
        "detail": outcome.detail,
        "signals": list(outcome.signals),
        "method": outcome.method,
        "freed_bytes": outcome.freed_bytes,
    }


def leftovers(listing_processes: Sequence[GpuProcess]) -> list[GpuProcess]:
    """The bulk "clean up the leftovers of this service" target set: only processes proven
    the service's (never a suspect, a foreign port holder or anything foreign)."""
    return [proc for proc in listing_processes if proc.klass in OFFERED_CLASSES]


def leftovers_note(listing_processes: Sequence[GpuProcess], key: str = "K") -> str | None:
    """'2 leftovers hold 169 GiB: press K', from one listing; None when there are none.

    Memory a process holds that the listing could not read is not counted as 0: the
    sum is then "at least", and with none read, no size is said.
    """
    found = leftovers(listing_processes)
    if not found:
        return None
    held = [proc.gpu_memory_bytes for proc in found]
    known = [size for size in held if size is not None]
    noun = counted(len(found), "leftover")
    if not known:
        return f"{noun} on the GPUs: press {key}"
    verb = "holds" if len(found) == 1 else "hold"
    least = "" if len(known) == len(held) else "at least "
    return f"{noun} {verb} {least}{gib(sum(known), digits=0)}: press {key}"
