"""`servedeck summary`: the Markdown state summary of a profile's deployment, written to a file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import cast

from tui.cli import run_async
from tui.commands._target import deck_from_args
from tui.core.redact import redact_text
from tui.deck import Deck
from tui.summary import (
    collect_summary,
    default_summary_name,
    export_summary,
    render_json,
    render_markdown,
    summary_secrets,
)
from tui.summary.export import check_writable


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "summary",
        parents=[common],
        help="write a Markdown state summary (hardware, software, model, load, benchmarks)",
        description=(
            "Collect everything about the profile's deployment and write it as Markdown. "
            "Without -o the file gets a timestamped name in the current folder; an existing "
            "file is never replaced without --force."
        ),
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="where to write it; '-' prints to stdout"
    )
    parser.add_argument("--force", action="store_true", help="replace FILE if it exists")
    parser.add_argument("--json", action="store_true", help="write the collected facts as JSON")
    parser.set_defaults(func=run_summary)


async def summary_text(args: argparse.Namespace) -> tuple[str, str, tuple[str, ...]]:
    """(profile name, rendered text, what could not be collected) for the parsed arguments."""
    deck = deck_from_args(args)
    try:
        text, missing = await deck_summary(deck, as_json=args.json)
    finally:
        await deck.close()
    return deck.profile.name, text, missing


async def deck_summary(deck: Deck, *, as_json: bool = False) -> tuple[str, tuple[str, ...]]:
    """(rendered text, what could not be collected) of an open deck, secrets redacted."""
    inputs = await collect_summary(deck)
    secrets = summary_secrets(deck)
    text = render_json(inputs, secrets) if as_json else render_markdown(inputs, secrets)
    return text, tuple(redact_text(problem, secrets) for problem in inputs.problems)


def _report_missing(missing: tuple[str, ...]) -> int:
    """The summary is written either way; a script learns from the exit status it is partial."""
    if not missing:
        return 0
    print(f"servedeck: summary incomplete, {len(missing)} part(s) not collected:", file=sys.stderr)
    for problem in missing:
        print(f"  {problem}", file=sys.stderr)
    return 1


def run_summary(args: argparse.Namespace) -> int:
    if args.output not in (None, "-"):  # refused at once, not after collecting the box
        check_writable(Path(args.output), force=args.force)
    result = run_async(lambda: summary_text(args))
    profile_name, text, missing = cast("tuple[str, str, tuple[str, ...]]", result)
    if args.output == "-":
        sys.stdout.write(text)
        return _report_missing(missing)
    target = Path(args.output) if args.output else None
    if target is None and args.json:
        target = Path.cwd() / default_summary_name(profile_name).replace(".md", ".json")
    path = export_summary(text, profile_name, target, force=args.force)
    print(f"wrote {path}")
    return _report_missing(missing)
