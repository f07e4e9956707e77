"""`servedeck logs`: the service log (journal of the unit, or the log file), optionally followed."""

from __future__ import annotations

import argparse
import sys

from tui.cli import run_async
from tui.commands._target import deck_from_args
from tui.core.errors import UsageError
from tui.core.redact import redact_text
from tui.logs.classify import strip_ansi


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "logs", parents=[common], help="print the service log (journal or log file)"
    )
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    parser.add_argument("-n", "--lines", type=int, default=200, help="lines of history (200)")
    parser.set_defaults(func=run_logs)


def run_logs(args: argparse.Namespace) -> int:
    if args.lines < 0:
        raise UsageError("-n must be 0 or more")
    deck = deck_from_args(args)
    lines = deck.log_lines(initial_lines=args.lines, follow=args.follow)
    if lines is None:
        raise UsageError(f"profile {deck.profile.name!r}: set service.unit or service.log_file")

    secrets = (deck.api_key,) if deck.api_key else ()

    async def pump() -> None:
        try:
            async for line in lines:
                sys.stdout.write(redact_text(strip_ansi(line.text), secrets) + "\n")
                sys.stdout.flush()
        finally:
            await deck.close()

    run_async(pump)
    return 0
