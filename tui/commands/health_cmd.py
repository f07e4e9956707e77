"""`servedeck health`: per-GPU badge, XID events and health counters; `--follow` for new XIDs."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from tui.commands._width import hanging
from tui.compose import host_for, open_deck
from tui.core.config import Profile
from tui.health.health_run import bus_map
from tui.health.report import HealthReport
from tui.health.xid.decode import XidEvent
from tui.health.xid.kernel_log import KernelLogFollower
from tui.hosts.profiles import load_profile

_MARKS = {"ok": "OK  ", "warn": "WARN", "crit": "CRIT"}


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "health",
        parents=[common],
        help="GPU health: XID events from the kernel log, ECC, row remaps, PCIe replays",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--follow", action="store_true", help="after the report, print each new XID as it is logged"
    )
    parser.set_defaults(func=_health)


def format_event(event: XidEvent) -> str:
    gpu = f"GPU{event.gpu_index}" if event.gpu_index is not None else event.bus_id
    return hanging(
        f"  XID {event.number_text:<4} {gpu:<5} ",
        f"{event.name}: {event.detail or event.meaning} -> {event.action}",
    )


def print_report(report: HealthReport) -> None:
    for note in report.notes:
        print(hanging("note: ", note))
    for gpu in report.gpus:
        c = gpu.counters
        figures = (
            f"ECC unc. vol/agg {c.ecc_volatile_uncorrected}/{c.ecc_aggregate_uncorrected}, "
            f"remap pending {'yes' if c.remapped_rows_pending else 'no'}, "
            f"replays {c.pcie_replays}"
            if c
            else "no counters"
        )
        print(
            hanging(f"[{_MARKS.get(gpu.badge, gpu.badge)}] GPU{gpu.index} {gpu.bus_id} ", figures)
        )
        for reason in gpu.reasons:
            if not reason.startswith("XID "):  # the events below say it in full
                print(hanging("       ", reason))
        for event in gpu.events:
            print(format_event(event))
    for event in report.unmatched_events:
        print(format_event(event))
    verdict = health_verdict(report)
    if verdict == "unknown":
        verdict = "unknown: no GPU answered"
    print(hanging("verdict: ", f"{verdict} ({report.event_source or 'no'} kernel log)"))


def health_verdict(report: HealthReport) -> str:
    """The worst badge of the box: crit, warn or ok; unknown when no GPU answered."""
    if not report.gpus:
        return "unknown"
    worst = {gpu.badge for gpu in report.gpus}
    return "crit" if "crit" in worst else "warn" if "warn" in worst else "ok"


async def _follow(profile: Profile, as_json: bool) -> None:
    host = host_for(profile)
    try:
        ids = await host.run(
            ["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"], timeout_s=20
        )
        follower = KernelLogFollower(host, initial_lines=0)
        async for event in follower.events(bus_map(ids.stdout)):
            print(json.dumps(event.as_dict()) if as_json else format_event(event), flush=True)
    finally:
        await host.close()


def _health(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile, demo=args.demo, read_only=args.read_only)

    async def _run() -> HealthReport:
        deck = open_deck(profile)  # the demo's report is about its simulated box
        try:
            return await deck.hardware_health()
        finally:
            await deck.close()

    report = asyncio.run(_run())
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        where = profile.host_label
        print(hanging("servedeck health: ", f"profile {profile.name} ({where})"))
        print_report(report)
    sys.stdout.flush()
    if args.follow and not profile.is_demo:
        asyncio.run(_follow(profile, args.json))
    return 1 if any(gpu.badge == "crit" for gpu in report.gpus) else 0
