"""`servedeck doctor`: is everything the console needs there? One verdict per line."""

from __future__ import annotations

import argparse
import asyncio

from tui.commands._width import hanging
from tui.compose import open_deck
from tui.hostfacts.doctor import DoctorCheck, doctor_verdict
from tui.hosts.profiles import load_profile
from tui.hosts.ssh_config import route_report
from tui.ops.restart_guard import leftovers_checks

_MARKS = {"ok": "OK  ", "warn": "WARN", "fail": "FAIL", "skip": "SKIP"}


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "doctor", parents=[common], help="check the host, GPU tools, systemd and the service port"
    )
    parser.add_argument(
        "--unit",
        action="store_true",
        help="lint the profile's systemd unit (KillMode, timeouts, restarts, limits, env)",
    )
    parser.add_argument(
        "--interconnect",
        action="store_true",
        help="check P2P, ACS, IOMMU, BAR1, PCIe links and NUMA placement (read-only)",
    )
    parser.add_argument("--json", action="store_true", help="with --unit or --interconnect: JSON")
    parser.set_defaults(func=_doctor)


def format_check(check: DoctorCheck) -> str:
    """One check per line; a long detail wraps under the detail column (80 columns)."""
    return hanging(f"[{_MARKS.get(check.verdict, check.verdict)}] {check.name:<13} ", check.detail)


def _doctor(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile, demo=args.demo, read_only=args.read_only)
    if args.unit:
        from tui.commands.unit_lint_out import run_unit_lint

        return run_unit_lint(profile, as_json=args.json)
    if args.interconnect:
        from tui.commands.interconnect_cmd import run_interconnect_doctor

        return run_interconnect_doctor(args, profile)

    async def _run() -> list[DoctorCheck]:
        # The demo's checks are about its simulated box, started here and ready.
        deck = open_deck(profile, demo_autostart=True, demo_wait_ready=True)
        try:
            return [*await deck.doctor_checks(), *await leftovers_checks(profile, deck)]
        finally:
            await deck.close()

    checks = asyncio.run(_run())
    where = profile.host_label
    print(hanging("servedeck doctor: ", f"profile {profile.name} ({where})"))
    if profile.host.ssh_alias:  # the route ~/.ssh/config gave, and where each value came from
        for line in route_report(profile.host):
            print(hanging("  ", line))
    for check in checks:
        print(format_check(check))
    ready, verdict = doctor_verdict(checks)
    print(hanging("verdict: ", verdict))
    return 0 if ready else 1
