"""`servedeck probe`: P2P matrix and all-reduce sweep on idle GPUs, after a confirmation."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from tui.commands._width import hanging
from tui.compose import open_deck
from tui.core.audit import append_audit
from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.hosts.profiles import load_profile
from tui.ops.probe_run import probe_refusal, run_and_record


class ProbeRefused(ServedeckError):
    exit_code = 3


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "probe",
        parents=[common],
        help="measure P2P and all-reduce bandwidth on idle GPUs (asks first)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    parser.add_argument(
        "--max-bytes", type=int, default=1024**3, help="largest all-reduce message (1 GiB)"
    )
    parser.set_defaults(func=_probe)


async def _refusal(profile: Profile) -> tuple[str | None, int]:
    deck = open_deck(profile, demo_autostart=False)
    try:
        return await probe_refusal(deck)
    finally:
        await deck.close()


def _confirm(profile: Profile, gpus: int) -> bool:
    if not sys.stdin.isatty():
        raise ServedeckError("probe: not a terminal to confirm on; pass --yes to run it")
    answer = input(
        f"Run the interconnect probe on {gpus} GPU(s) of {profile.host.route}? It uses every "
        "GPU for up to 90 s. [y/N] "
    )
    return answer.strip().lower() in ("y", "yes")


async def _measure(profile: Profile, max_bytes: int) -> dict[str, object]:
    deck = open_deck(profile, demo_autostart=False)
    try:
        return await run_and_record(deck, max_bytes)
    finally:
        await deck.close()


def _probe(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile, demo=args.demo, read_only=args.read_only)
    where = profile.host_label
    if profile.read_only:
        raise ServedeckError("probe: the profile is read-only (the probe loads every GPU)")
    why, gpus = asyncio.run(_refusal(profile))
    if why:
        append_audit("probe_refused", where, {"reason": why})
        raise ProbeRefused(f"probe refused on {where}: {why}")
    if not args.yes and not _confirm(profile, gpus):
        print("probe: not run")
        return 1
    result = asyncio.run(_measure(profile, args.max_bytes))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(hanging("servedeck probe: ", f"profile {profile.name} ({where})"))
    for row in result["allreduce"]:  # type: ignore[attr-defined]
        print(
            f"  {row['bytes']:>12,} B  {row['time_us']:>10.1f} us  "
            f"algbw {row['algbw_gbps']:>8.2f}  busbw {row['busbw_gbps']:>8.2f} GB/s"
        )
    print(hanging("verdict: ", str(result["verdict"])))
    return 0
