"""`servedeck procs`: every process holding GPU memory on the host, classified."""

from __future__ import annotations

import argparse
import asyncio
import json

from tui.config import Profile
from tui.console import host_for
from tui.hosts.base import Host
from tui.procs.gpu_hints import gpu_snapshot
from tui.procs.listing import context_for, list_gpu_processes
from tui.procs.model import ProcListing
from tui.procs.text import listing_json, listing_lines
from tui.profile_store import load_profile


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "procs",
        parents=[common],
        help="list GPU processes: service, leftover, defunct or foreign",
    )
    parser.add_argument("--json", action="store_true", help="print the listing as JSON")
    parser.set_defaults(func=_procs)


async def current_listing(profile: Profile, host: Host) -> ProcListing:
    """One listing of the profile's host, hinted by its GPU source when there is one."""
    snapshot = await gpu_snapshot(profile, host)
    return await list_gpu_processes(host, snapshot, context_for(profile, host))


def _procs(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile, demo=args.demo, read_only=args.read_only)

    async def _run() -> ProcListing:
        host = host_for(profile)
        try:
            return await current_listing(profile, host)
        finally:
            await host.close()

    listing = asyncio.run(_run())
    if args.json:
        print(json.dumps(listing_json(listing), indent=2, sort_keys=True))
    else:
        print(f"servedeck procs: {listing.host_label} (profile {profile.name})")
        print("\n".join(listing_lines(listing)))
    return 0
