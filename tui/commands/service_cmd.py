"""`servedeck service start|restart|stop`: the unit, with consent and the restart guard.

start and restart are refused while leftovers of the service hold GPU memory above
the threshold or hold its port; the refusal names each PID and its GiB.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from tui.commands._target import deck_from_args
from tui.core.errors import UsageError
from tui.ops.restart_guard import guarded_action
from tui.serving.unit.restart_guard import DEFAULT_THRESHOLD_BYTES, GIB
from tui.serving.unit.service import VERBS, ActionOutcome


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "service",
        parents=[common],
        help="start, restart or stop the profile's unit (start/restart refuse over leftovers)",
        epilog="exit status: 0 done; 1 systemctl failed; 4 refused: leftovers hold GPU "
        "memory or the port (end them with `servedeck kill --leftovers`).",
    )
    parser.add_argument("verb", choices=VERBS, help="what to do with the unit")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.add_argument(
        "--threshold-gib",
        type=float,
        default=DEFAULT_THRESHOLD_BYTES / GIB,
        metavar="GIB",
        help="GPU memory leftovers may hold before start/restart is refused (default 1)",
    )
    parser.set_defaults(func=_service)


def _confirm(verb: str, unit: str, args: argparse.Namespace) -> bool:
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"service {verb}: not on a terminal, so --yes is required")
    return input(f"{verb.capitalize()} {unit}? [y/N] ").strip().lower() in ("y", "yes")


def _service(args: argparse.Namespace) -> int:
    if args.threshold_gib < 0:
        raise UsageError("service: --threshold-gib must not be negative")
    deck = deck_from_args(args, demo_serving=False)
    unit = deck.profile.service.unit or deck.profile.name

    async def _run() -> ActionOutcome | None:
        try:
            if not deck.profile.read_only and not _confirm(args.verb, unit, args):
                return None
            return await guarded_action(
                deck,
                args.verb,
                confirmed=True,
                threshold_bytes=int(args.threshold_gib * GIB),
            )
        finally:
            await deck.close()

    outcome = asyncio.run(_run())
    if outcome is None:
        print("nothing done")
        return 0
    status = "done" if outcome.ok else f"failed (exit {outcome.exit_status})"
    print(f"{deck.host_label}: {args.verb} {unit}: {status}: {outcome.message}".rstrip(": "))
    return 0 if outcome.ok else 1
