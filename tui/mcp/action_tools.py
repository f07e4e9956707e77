"""The MCP tools that change the host or load its server, through the audited paths.

A benchmark is the fleet's quick benchmark (planned, refused read-only, audited, kept in
the bench history). stop and restart are the CLI's guarded service actions; kill_leftovers
is the console's killer. Each takes the identity it acts on, as an operator's confirmation
would name it: the boot id (a rebooted or different machine is refused), and for a
process its pid and start ticks (a pid reused since the agent listed it is refused before
any signal, and the killer's helper re-checks both again as it signals). Every request,
refusal and outcome is audited; `servedeck mcp` sets `"via": "mcp"` on each record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

# pydantic (the SDK's schemas) refuses typing.TypedDict before Python 3.12
from typing_extensions import TypedDict

from tui.commands.procs_cmd import current_listing
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.fleet.actions import read_identity
from tui.fleet.bench_action import bench_line, plan_bench, run_bench_on_host
from tui.mcp.results import BenchmarkResult, KillEntry, KillResult, ServiceActionResult
from tui.ops.gpu_hints import deck_context, rereader
from tui.ops.restart_guard import guarded_action
from tui.procs.kill import kill_processes, refuse_before_asking
from tui.procs.model import OFFERED_CLASSES, GpuProcess

KILL_ACTION = "mcp kill_leftovers"


class ProcessTarget(TypedDict):
    """A process as `processes` listed it: kill_leftovers is refused unless both still match."""

    pid: int
    start_ticks: int


def _refuse(deck: Deck, what: str, reason: str, extra: dict[str, object] | None = None) -> None:
    append_audit(
        "mcp.refused", deck.host_label, {"action": what, "reason": reason, **(extra or {})}
    )
    raise ServedeckError(f"{deck.host_label}: {what} refused: {reason}")


def _check_boot(deck: Deck, what: str, given: str, now: str) -> None:
    if given.strip() != now:
        _refuse(
            deck,
            what,
            f"boot id {given.strip()[:8] or '(empty)'} is not the host's (now {now[:8]}): "
            "it rebooted or is another machine; read `status` again",
        )


async def start_benchmark_result(deck: Deck, timeout_s: float) -> BenchmarkResult:
    """The profile's default preset (`quick`), stopped after `timeout_s`."""
    plan = await plan_bench(deck.profile.name, deck)
    try:
        result = await asyncio.wait_for(run_bench_on_host(plan, deck, confirmed=True), timeout_s)
    except TimeoutError:
        append_audit("mcp.bench.timeout", deck.host_label, {"timeout_s": timeout_s})
        raise ServedeckError(
            f"{deck.host_label}: the benchmark did not finish in {timeout_s:g} s; it was stopped"
        ) from None
    return {
        "preset": plan.preset,
        "workload": plan.workload,
        "run_id": result.run_id,
        "summary": bench_line(result),
        "result": result.to_dict(),
    }


async def service_result(deck: Deck, verb: str, boot_id: str) -> ServiceActionResult:
    """stop or restart the unit of the machine `boot_id` names (restart: the guard first)."""
    identity = await read_identity(deck)
    _check_boot(deck, verb, boot_id, identity.boot_id)
    outcome = await guarded_action(deck, verb, confirmed=True)
    return {
        "verb": verb,
        "unit": deck.unit_label,
        "ok": outcome.ok,
        "exit_status": outcome.exit_status,
        "message": outcome.message,
    }


def _matched(
    deck: Deck, processes: Sequence[GpuProcess], targets: Sequence[ProcessTarget]
) -> list[GpuProcess]:
    """The listed leftovers the targets name; any target that does not match refuses all."""
    by_pid = {proc.pid: proc for proc in processes}
    chosen, problems = [], []
    for target in targets:
        proc = by_pid.get(target["pid"])
        if proc is None:
            problems.append(f"pid {target['pid']} holds no GPU now")
        elif proc.identity.start_ticks != target["start_ticks"]:
            problems.append(
                f"pid {target['pid']} started at tick {proc.identity.start_ticks}, not "
                f"{target['start_ticks']}: another process has that pid now"
            )
        elif proc.klass not in OFFERED_CLASSES:
            problems.append(f"pid {target['pid']} is {proc.klass}, not a leftover of the service")
        else:
            chosen.append(proc)
    if problems:
        _refuse(deck, KILL_ACTION, "; ".join(problems), {"targets": list(targets)})
    return chosen


async def kill_result(deck: Deck, boot_id: str, targets: Sequence[ProcessTarget]) -> KillResult:
    """End the leftovers named by (boot id, pid, start ticks): SIGTERM, wait, SIGKILL."""
    if not targets:
        raise ServedeckError("kill_leftovers: name at least one process (pid and start_ticks)")
    listing = await current_listing(deck)
    _check_boot(deck, KILL_ACTION, boot_id, listing.boot_id)
    chosen = _matched(deck, listing.processes, targets)
    read_only = deck.profile.read_only
    # read-only, pid 1 and defunct: refused and audited, as in the console
    allowed, _refused = refuse_before_asking(
        deck.host_label, chosen, read_only=read_only, action=KILL_ACTION
    )
    report = await kill_processes(
        deck.host,
        allowed,
        await deck_context(deck),
        read_only=read_only,
        reread=rereader(deck),
        action=KILL_ACTION,
    )
    outcomes: list[KillEntry] = [
        {
            "pid": outcome.identity.pid,
            "start_ticks": outcome.identity.start_ticks,
            "outcome": outcome.outcome,
            "detail": outcome.detail,
            "freed_bytes": outcome.freed_bytes,
        }
        for outcome in report.outcomes
    ]
    return {"summary": report.summary_line(), "all_ended": report.all_ended, "outcomes": outcomes}
