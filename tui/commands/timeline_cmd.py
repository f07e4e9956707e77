"""`servedeck timeline`: the recorded events of a host, oldest first, as text or JSON lines."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tui.commands._target import profile_from_args
from tui.core.errors import UsageError
from tui.record.model import KINDS, Event
from tui.record.query import RecordingReader
from tui.record.timeparse import parse_instant
from tui.record.where import recording_path


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "timeline", parents=[common], help="what happened: the flight recorder's events"
    )
    parser.add_argument("--db", type=Path, help="recording file (default: the profile host's)")
    parser.add_argument("--since", help="from this instant ('2026-11-30 03:12', '03:12', '2h')")
    parser.add_argument("--until", help="up to this instant")
    parser.add_argument(
        "--kind", action="append", choices=KINDS, help="only this kind (repeatable)"
    )
    parser.add_argument("--gpu", type=int, help="only events of this GPU")
    parser.add_argument("--search", default="", help="only events whose text contains this")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(func=run_timeline)


def db_from_args(args: argparse.Namespace) -> Path:
    if args.db is not None:
        return args.db
    if getattr(args, "profile", None) is None and not getattr(args, "demo", False):
        raise UsageError("timeline: give --profile (or --demo) or --db FILE")
    return recording_path(profile_from_args(args))


def read_timeline(
    db: Path,
    since: str | None = None,
    until: str | None = None,
    kinds: tuple[str, ...] = (),
    gpu: int | None = None,
    search: str = "",
) -> tuple[list[Event], str]:
    """(the recorded events, oldest first; the note on rows skipped, or "")."""
    since_s = parse_instant(since, "--since") if since else None
    until_s = parse_instant(until, "--until") if until else None
    with RecordingReader(db) as reader:
        events = reader.events(since_s, until_s, kinds, gpu, search)
        return events, reader.bad_rows_note


def run_timeline(args: argparse.Namespace) -> int:
    events, skipped = read_timeline(
        db_from_args(args), args.since, args.until, tuple(args.kind or ()), args.gpu, args.search
    )
    for event in events:
        if args.json:
            print(json.dumps(event.as_json()))
        else:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.ts_s))
            gpu = f" GPU{event.gpu}" if event.gpu is not None else ""
            print(f"{stamp}  {event.kind:<7} {event.source:<9}{gpu} {event.text}")
    if skipped:  # on stderr: `--json` output stays one object per line
        print(f"servedeck: warning: {skipped}", file=sys.stderr)
    return 0
