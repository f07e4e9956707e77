"""`servedeck kill`: end leftover GPU processes (or named pids) with every safety check.

Non-interactive use needs --yes; on a terminal it asks y/N. A foreign or suspect process
(not proven the service's) is only signalled after its pid is typed (or given with
--confirm-foreign); --leftovers never includes one.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys

from tui.commands._target import deck_from_args
from tui.commands.procs_cmd import current_listing
from tui.core.errors import UsageError
from tui.ops.gpu_hints import deck_context, rereader
from tui.procs.kill import DEFAULT_TIMEOUT_S, kill_processes, leftovers, refuse_before_asking
from tui.procs.model import CONFIRM_CLASSES, GpuProcess, KillReport
from tui.procs.text import report_lines, target_lines


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "kill",
        parents=[common],
        help="end leftover GPU processes (SIGTERM, wait, SIGKILL) after checks",
    )
    parser.add_argument("pids", nargs="*", type=int, metavar="PID", help="GPU processes to end")
    parser.add_argument(
        "--leftovers", action="store_true", help="every leftover of the profile's service"
    )
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"seconds between SIGTERM and SIGKILL (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--confirm-foreign",
        type=int,
        action="append",
        default=[],
        metavar="PID",
        help="the typed confirmation for a foreign or suspect process, given up front",
    )
    parser.set_defaults(func=_kill)


def choose_targets(processes: tuple[GpuProcess, ...], args: argparse.Namespace) -> list[GpuProcess]:
    if bool(args.pids) == bool(args.leftovers):
        raise UsageError("kill: give PIDs or --leftovers (not both, not neither)")
    if args.leftovers:
        return leftovers(processes)
    by_pid = {proc.pid: proc for proc in processes}
    missing = [pid for pid in args.pids if pid not in by_pid]
    if missing:
        raise UsageError(
            f"kill: not a GPU process on this host: {', '.join(map(str, missing))} "
            "(see `servedeck procs`)"
        )
    return [by_pid[pid] for pid in dict.fromkeys(args.pids)]


def confirm(targets: list[GpuProcess], args: argparse.Namespace) -> set[int] | None:
    """The confirmed foreign pids, or None when the operator declined."""
    confirmed = set(args.confirm_foreign)
    foreign = [
        proc for proc in targets if proc.klass in CONFIRM_CLASSES and proc.pid not in confirmed
    ]
    if args.yes and not foreign:
        return confirmed
    if not sys.stdin.isatty():
        need = "--yes" if not foreign else "--confirm-foreign PID for each foreign/suspect process"
        raise UsageError(f"kill: not on a terminal, so {need} is required")
    for proc in foreign:
        typed = input(f"pid {proc.pid} is {proc.klass} ({proc.reason}); type its pid to confirm: ")
        if typed.strip() == str(proc.pid):
            confirmed.add(proc.pid)
    if not args.yes:
        answer = input(f"End {len(targets)} process(es)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return None
    return confirmed


def _kill(args: argparse.Namespace) -> int:
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise UsageError("kill: --timeout must be a positive, finite number of seconds")
    deck = deck_from_args(args)
    profile, host = deck.profile, deck.host

    nothing_allowed: list[bool] = []

    async def _run() -> KillReport | None:
        try:
            listing = await current_listing(deck)
            targets = choose_targets(listing.processes, args)
            if not targets:
                print(f"{host.label}: no leftover GPU processes")
                return None
            print("\n".join(target_lines(host.label, targets)))
            action = "kill --leftovers" if args.leftovers else "kill"
            # Refused whatever is typed (read-only, pid 1, defunct): audited, never asked.
            allowed, refused = refuse_before_asking(
                host.label, targets, read_only=profile.read_only, action=action
            )
            for pid, reason in refused.items():
                print(f"pid {pid}: {reason}")
            if not allowed:
                nothing_allowed.append(bool(refused))
                return None
            answer = confirm(allowed, args)
            if answer is None:
                print("nothing done")
                return None
            return await kill_processes(
                host,
                allowed,
                await deck_context(deck),
                read_only=profile.read_only,
                timeout_s=args.timeout,
                confirmed_foreign=answer,
                reread=rereader(deck),
                action=action,
            )
        finally:
            await deck.close()

    report = asyncio.run(_run())
    if report is None:
        return 1 if any(nothing_allowed) else 0
    print("\n".join(report_lines(report)))
    return 0 if report.all_ended else 1
