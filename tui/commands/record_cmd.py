"""`servedeck record`: record a profile's host headless (tmux, cron @reboot, a systemd --user unit)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from tui.alerts.engine import AlertChange
from tui.alerts.monitor import AlertMonitor
from tui.cli import run_async
from tui.commands._target import profile_from_args
from tui.compose import open_deck
from tui.core.config import Profile
from tui.record.feed import RecordFeed
from tui.record.headless import HeadlessRecorder
from tui.record.retention import RetentionPolicy
from tui.record.session import restore_mutes
from tui.record.where import host_slug, recording_path
from tui.record.writer import Recorder


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "record", parents=[common], help="record GPUs, metrics and events to the flight recorder"
    )
    parser.add_argument(
        "--seconds", type=float, help="stop after N seconds (default: until Ctrl-C)"
    )
    parser.add_argument(
        "--db", type=Path, help="recording file (default: one per host in the data dir)"
    )
    parser.add_argument(
        "--retention-days", type=float, help="keep this many days (the profile's, else 7)"
    )
    parser.add_argument(
        "--install-unit",
        action="store_true",
        help="write a systemd --user unit that records this profile and print it (not enabled)",
    )
    parser.set_defaults(func=run_record)


def _unit_text(profile: Profile, db: Path | None) -> str:
    argv = [sys.executable, "-m", "tui", "record"]
    argv += ["--demo"] if profile.is_demo and profile.path is None else []
    if profile.path is not None:
        argv += ["-p", str(profile.path)]
    if db is not None:
        argv += ["--db", str(db)]
    env = "".join(
        f"Environment={name}={os.environ[name]}\n"
        for name in ("SERVEDECK_DATA_DIR", "SERVEDECK_CONFIG_DIR", "SERVEDECK_LOG_DIR")
        if os.environ.get(name)
    )
    return (
        "[Unit]\n"
        f"Description=servedeck flight recorder for {profile.name} ({profile.host_label})\n"
        "After=network-online.target\n\n"
        "[Service]\n"
        f"ExecStart={shlex.join(argv)}\n"
        f"{env}"
        "Restart=on-failure\n"
        "RestartSec=10\n\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def install_unit(profile: Profile, db: Path | None) -> Path:
    """Write the unit file; enabling it is left to the operator."""
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    name = f"servedeck-record-{host_slug(profile.name)}.service"
    target = config_home / "systemd" / "user" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_unit_text(profile, db))
    return target


def _print_alert(change: AlertChange) -> None:
    stamp = time.strftime("%H:%M:%S", time.localtime(change.at_s))
    print(f"{stamp} alert {change.text}", file=sys.stderr, flush=True)


async def record(args: argparse.Namespace, profile: Profile) -> int:
    db = args.db or recording_path(profile)
    recorder = Recorder(
        db,
        host_label=profile.host_label,
        retention=RetentionPolicy(
            retention_days=args.retention_days or profile.record.retention_days
        ),
        what=f"servedeck record -p {profile.name}",
    )
    recorder.start()  # RecorderBusy names the holder
    deck = open_deck(profile, demo_autostart=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    print(f"recording {deck.host_label} to {db} (Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        feed = RecordFeed(recorder, deck.host_label)
        monitor = AlertMonitor(profile.alerting, deck.host_label, feed=feed, notify=_print_alert)
        restore_mutes(db, monitor.engine)
        headless = HeadlessRecorder(deck, feed, monitor=monitor)
        headless.on_tick.append(_FailureWatch(recorder))
        try:
            await headless.run(args.seconds, stop)
        finally:
            monitor.close()
    finally:
        await deck.close()
        recorder.close()
    stats = recorder.stats()
    cpu = f", {time.process_time():.1f} s CPU"  # this process only, not a simulator's servers
    print(
        f"recorded {stats.rows_written} rows in {stats.commits} commits to {db}{cpu}",
        file=sys.stderr,
    )
    if stats.rows_failed:
        print(f"servedeck: error: {stats.failure_line()}", file=sys.stderr)
        return 1
    return 0


class _FailureWatch:
    """Says on stderr, once per new reason, that rows are not being written (disk full)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.said: str | None = None

    def __call__(self, _headless: HeadlessRecorder) -> None:
        failure = self.recorder.stats().failure
        if failure is not None and failure != self.said:
            self.said = failure
            print(f"servedeck: recording failing: {failure}", file=sys.stderr, flush=True)


def run_record(args: argparse.Namespace) -> int:
    profile = profile_from_args(args)
    if args.install_unit:
        path = install_unit(profile, args.db)
        print(path.read_text())
        print(f"# written to {path}; not enabled. To start it at login:")
        print(f"#   systemctl --user daemon-reload && systemctl --user enable --now {path.name}")
        return 0
    result = run_async(lambda: record(args, profile))
    return int(result or 0)  # type: ignore[call-overload]
