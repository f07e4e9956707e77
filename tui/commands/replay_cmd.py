"""`servedeck replay`: the Deck as recorded at an instant, stepped through time (no host contacted)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tui.commands._target import profile_from_args
from tui.commands.timeline_cmd import db_from_args
from tui.core.errors import UsageError
from tui.record.query import RecordingReader
from tui.record.timeparse import parse_instant


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "replay", parents=[common], help="the Deck as the flight recorder saw it at a time"
    )
    parser.add_argument(
        "--at", required=True, help="the instant ('2026-11-30 03:12', '03:12', '2h')"
    )
    parser.add_argument("--db", type=Path, help="recording file (default: the profile host's)")
    parser.set_defaults(func=run_replay)


def run_replay(args: argparse.Namespace) -> int:
    at_s = parse_instant(args.at, "--at")
    db = db_from_args(args)
    with RecordingReader(db) as reader:  # a missing or foreign file fails here, in one line
        span = reader.span()
        host = reader.meta("host") or ""
    if span is None:
        raise UsageError(f"{db}: the recording is empty")
    if not span[0] - 60 <= at_s <= span[1] + 60:
        first, last = (_stamp(value) for value in span)
        raise UsageError(f"--at {args.at!r} is outside the recording ({first} to {last})")
    from tui.app.replay_app import ReplayApp

    keys = profile_from_args(args).keys if getattr(args, "profile", None) else {}
    return ReplayApp(db, at_s, host, keys=keys).run() or 0


def _stamp(ts_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts_s))
