"""`servedeck logs`: the service log (journal of the unit, or the log file), optionally followed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator

from tui.cli import run_async
from tui.commands._target import open_host, require_demo_support, resolve_profile
from tui.errors import UsageError
from tui.logs.journal import JournalFollower
from tui.logs.line import LogLine, strip_ansi
from tui.logs.tail import follow_file


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "logs", parents=[common], help="print the service log (journal or log file)"
    )
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    parser.add_argument("-n", "--lines", type=int, default=200, help="lines of history (200)")
    parser.set_defaults(func=run_logs)


def _source(args: argparse.Namespace) -> tuple[object, AsyncIterator[LogLine]]:
    profile = resolve_profile(args)
    host = open_host(profile)
    service = profile.service
    if service.unit:
        follower = JournalFollower(host, service.unit, initial_lines=args.lines, follow=args.follow)
        return host, follower.lines()
    if service.log_file:
        return host, follow_file(
            host, service.log_file, initial_lines=args.lines, follow=args.follow
        )
    raise UsageError(f"profile {profile.name!r}: set service.unit or service.log_file")


def run_logs(args: argparse.Namespace) -> int:
    if args.demo:
        require_demo_support()
    if args.lines < 0:
        raise UsageError("-n must be 0 or more")
    host, lines = _source(args)

    async def pump() -> None:
        try:
            async for line in lines:
                sys.stdout.write(strip_ansi(line.text) + "\n")
                sys.stdout.flush()
        finally:
            await host.close()  # type: ignore[attr-defined]

    run_async(pump)
    return 0
