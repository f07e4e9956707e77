"""`servedeck procs`: every process holding GPU memory on the host, classified."""

from __future__ import annotations

import argparse
import asyncio
import json

from tui.commands._target import deck_from_args
from tui.deck import Deck
from tui.ops.gpu_hints import deck_context, gpu_snapshot
from tui.procs.listing import list_gpu_processes
from tui.procs.model import ProcListing
from tui.procs.text import listing_json, listing_lines


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "procs",
        parents=[common],
        help="list GPU processes: service, leftover, suspect, defunct or foreign",
    )
    parser.add_argument("--json", action="store_true", help="print the listing as JSON")
    parser.set_defaults(func=_procs)


async def current_listing(deck: Deck) -> ProcListing:
    """One listing of the deck's host, hinted by its GPU source when there is one."""
    snapshot = await gpu_snapshot(deck)
    return await list_gpu_processes(deck.host, snapshot, await deck_context(deck))


def _procs(args: argparse.Namespace) -> int:
    deck = deck_from_args(args)
    profile = deck.profile

    async def _run() -> ProcListing:
        try:
            return await current_listing(deck)
        finally:
            await deck.close()

    listing = asyncio.run(_run())
    if args.json:
        print(json.dumps(listing_json(listing), indent=2, sort_keys=True))
    else:
        print(f"servedeck procs: {listing.host_label} (profile {profile.name})")
        print("\n".join(listing_lines(listing)))
    return 0
