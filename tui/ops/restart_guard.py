"""The restart guard over a Deck: list its leftovers, judge them, refuse or act.

The verdict itself is pure (`tui.serving.unit.restart_guard.assess`); this reads the Deck's GPU
source, service and processes for it, and `servedeck doctor` opens the profile's Deck.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tui.compose import open_deck
from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.hostfacts.doctor import OK, SKIP, WARN, DoctorCheck
from tui.ops.gpu_hints import deck_context, gpu_snapshot
from tui.procs.listing import list_gpu_processes
from tui.procs.model import ProcListing
from tui.serving.unit.restart_guard import (
    DEFAULT_THRESHOLD_BYTES,
    GUARDED_VERBS,
    GuardVerdict,
    assess,
    inactive_note,
    refuse,
)
from tui.serving.unit.service import ActionOutcome


async def guard_listing(deck: Deck) -> ProcListing:
    """A fresh listing with the service taken as down: a port holder outside it is in the way."""
    snapshot = await gpu_snapshot(deck)
    context = replace(await deck_context(deck), wide=True, service_stopped=True)
    return await list_gpu_processes(deck.host, snapshot, context)


def service_name(deck: Deck) -> str:
    return deck.profile.service.unit or deck.profile.name


async def check(
    deck: Deck, verb: str, threshold_bytes: int = DEFAULT_THRESHOLD_BYTES
) -> GuardVerdict:
    listing = await guard_listing(deck)
    return assess(
        listing,
        verb,
        service=service_name(deck),
        port=deck.profile.service.port,
        threshold_bytes=threshold_bytes,
    )


async def guarded_action(
    deck: Deck,
    verb: str,
    *,
    confirmed: bool,
    threshold_bytes: int = DEFAULT_THRESHOLD_BYTES,
    audit_path: Path | None = None,
) -> ActionOutcome:
    """start/restart only once the guard passes; stop always. Raises GuardRefused."""
    controller = deck.service()
    if controller is None:
        raise ServedeckError(f"profile {deck.profile.name} names no systemd unit")
    if verb in GUARDED_VERBS:
        verdict = await check(deck, verb, threshold_bytes)
        if verdict.blocked:
            raise refuse(verdict, audit_path)
    return await getattr(controller, verb)(confirmed=confirmed)


async def leftovers_note(deck: Deck) -> str | None:
    """The "service inactive but N GiB held by leftovers" line for this deck, or None."""
    listing = await list_gpu_processes(
        deck.host, await gpu_snapshot(deck), await deck_context(deck)
    )
    return inactive_note(listing)


async def leftovers_checks(profile: Profile, deck: Deck | None = None) -> list[DoctorCheck]:
    """doctor's "leftovers" line when the service is inactive but leftovers hold memory."""
    own = deck is None
    deck = deck or open_deck(profile)
    try:
        service = deck.service()
        if service is None:
            return []
        state = await service.state()
        if state.is_active:
            return []
        note = await leftovers_note(deck)
    except ServedeckError as error:
        return [DoctorCheck("leftovers", SKIP, f"could not list leftovers: {error}")]
    finally:
        if own:
            await deck.close()
    if note is None:
        return [DoctorCheck("leftovers", OK, "service inactive and nothing left behind")]
    return [DoctorCheck("leftovers", WARN, f"{note}: end them with `servedeck kill --leftovers`")]
