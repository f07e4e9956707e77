"""`servedeck doctor`: is everything the console needs there? One verdict per line."""

from __future__ import annotations

import argparse
import asyncio

from tui.commands._width import hanging
from tui.console import host_for
from tui.doctor import FAIL, DoctorCheck, run_doctor
from tui.profile_store import load_profile

_MARKS = {"ok": "OK  ", "warn": "WARN", "fail": "FAIL", "skip": "SKIP"}


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "doctor", parents=[common], help="check the host, GPU tools, systemd and the service port"
    )
    parser.set_defaults(func=_doctor)


def format_check(check: DoctorCheck) -> str:
    """One check per line; a long detail wraps under the detail column (80 columns)."""
    return hanging(f"[{_MARKS.get(check.verdict, check.verdict)}] {check.name:<13} ", check.detail)


def _doctor(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile, demo=args.demo, read_only=args.read_only)

    async def _run() -> list[DoctorCheck]:
        host = host_for(profile)
        try:
            return await run_doctor(host, profile)
        finally:
            await host.close()

    checks = asyncio.run(_run())
    print(f"servedeck doctor: profile {profile.name} ({profile.host.route})")
    for check in checks:
        print(format_check(check))
    failed = sum(check.verdict == FAIL for check in checks)
    print("verdict: " + (f"{failed} check(s) failed" if failed else "ready"))
    return 1 if failed else 0
