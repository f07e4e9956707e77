"""Polling many hosts at once: one Deck (one SSH connection) per host, none waiting on another.

Each host's poll is its own task. A refresh starts a poll for every host whose last
one has finished (polls of one host never overlap) and waits at most `host_timeout_s`
for each: a host that has not answered by then is shown as slow or unreachable in
this refresh, and its poll goes on in the background so the next refresh picks up
its answer. A host that cannot be connected fails at once during its SSH backoff
(tui.hosts.ssh), so a dead host costs one connect attempt every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tui.compose import open_deck
from tui.core.errors import ServedeckError
from tui.core.tasks import cancel_and_wait
from tui.deck import Deck
from tui.fleet.deck_probe import DeckProbe, HostProbe
from tui.fleet.groups import FleetMember
from tui.fleet.model import FleetRow

DEFAULT_HOST_TIMEOUT_S = 4.0
DEFAULT_CONCURRENCY = 32
DEFAULT_FIRST_POLL_CONCURRENCY = 12  # hosts logging in at once (see FleetCollector._first_poll)
CLOSE_TIMEOUT_S = 15.0  # per host: its streams ended, its SSH chain closed


@dataclass
class _Slot:
    probe: HostProbe
    task: asyncio.Task[FleetRow] | None = None
    last: FleetRow | None = None
    started_s: float = 0.0
    polls: int = 0
    answered: bool = False  # a poll of this host has finished (its login is done)


def with_deployment(probe: HostProbe, row: FleetRow) -> FleetRow:
    """The row with its profile's [deployment], whatever path made it (a late or crashed poll)."""
    if not isinstance(probe, DeckProbe):
        return row
    deployment = probe.deck.profile.deployment
    if deployment.name is None:
        return row
    return replace(row, deployment=deployment.name, headless=deployment.headless)


def _crashed_row(name: str, error: BaseException) -> FleetRow:
    return FleetRow(host=name, reachable=False, error=f"{name}: poll failed: {error!r}")


@dataclass
class FleetCollector:
    """Refreshes every host's row concurrently; `refresh()` returns within the host timeout."""

    probes: Sequence[HostProbe]
    host_timeout_s: float = DEFAULT_HOST_TIMEOUT_S
    concurrency: int = DEFAULT_CONCURRENCY
    refresh_durations_s: list[float] = field(default_factory=list)
    _slots: list[_Slot] = field(init=False)
    _limit: asyncio.Semaphore | None = field(init=False, default=None)
    first_poll_concurrency: int = DEFAULT_FIRST_POLL_CONCURRENCY
    _first_limit: asyncio.Semaphore | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._slots = [_Slot(probe) for probe in self.probes]

    @property
    def problems(self) -> tuple[str, ...]:
        """A host's failure is its row's; the collector itself has no other problem to show."""
        return ()

    def probe(self, name: str) -> HostProbe | None:
        return next((slot.probe for slot in self._slots if slot.probe.name == name), None)

    async def _guarded(self, slot: _Slot) -> FleetRow:
        if self._limit is None:
            self._limit = asyncio.Semaphore(self.concurrency)
            self._first_limit = asyncio.Semaphore(self.first_poll_concurrency)
        async with self._limit, self._first_poll(slot):
            try:
                return await slot.probe.poll()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a bug in one host's poll must not end the fleet
                return _crashed_row(slot.probe.name, error)
            finally:
                slot.answered = True

    def _first_poll(self, slot: _Slot) -> contextlib.AbstractAsyncContextManager[object]:
        """A host's first poll (its login and the first sessions) waits for a ramp slot.

        Fifty logins at once, each starting several sessions, can overload the console
        machine and a shared jump host (sshd's MaxStartups drops connections past its
        start limit); polls that time out then start their logins again and the fleet
        never settles. A host that answered once polls without waiting.
        """
        if slot.answered or self._first_limit is None:
            return contextlib.nullcontext()
        return self._first_limit

    def _late_row(self, slot: _Slot, now: float) -> FleetRow:
        waited = now - slot.started_s
        base = slot.last or FleetRow(host=slot.probe.name, reachable=False)
        return replace(
            base,
            reachable=False,
            error=f"{slot.probe.name}: no answer for {waited:.1f} s (slow or unreachable)",
        )

    async def refresh(self) -> list[FleetRow]:
        """Every host's newest row, in member order; never waits past host_timeout_s."""
        started = time.monotonic()
        for slot in self._slots:
            if slot.task is None or slot.task.done():
                slot.task = asyncio.create_task(
                    self._guarded(slot), name=f"fleet poll {slot.probe.name}"
                )
                slot.started_s = started
                slot.polls += 1
        pending = {slot.task for slot in self._slots if slot.task is not None}
        if pending:
            await asyncio.wait(pending, timeout=self.host_timeout_s)
        now = time.monotonic()
        rows = []
        for slot in self._slots:
            assert slot.task is not None
            if slot.task.done():
                slot.last = slot.task.result()
                rows.append(with_deployment(slot.probe, slot.last))
            else:
                rows.append(with_deployment(slot.probe, self._late_row(slot, now)))
        self.refresh_durations_s.append(now - started)
        return rows

    def next_interval_s(self, base_s: float) -> float:
        """Adaptive: at least base_s, and more when refreshes get slow (large fleets)."""
        last = self.refresh_durations_s[-1] if self.refresh_durations_s else 0.0
        return max(base_s, 2.0 * last, 0.05 * len(self._slots))

    async def close(self) -> None:
        await cancel_and_wait([slot.task for slot in self._slots if slot.task is not None])
        closing = [asyncio.ensure_future(slot.probe.close()) for slot in self._slots]
        if closing:  # a host whose link hangs must not hold the console's exit
            _, late = await asyncio.wait(closing, timeout=CLOSE_TIMEOUT_S)
            await cancel_and_wait(late)


def probes_for(members: Sequence[FleetMember]) -> list[HostProbe]:
    """One DeckProbe (one Deck, one Host, so one SSH connection) per member."""
    probes: list[HostProbe] = []
    for member in members:
        if member.profile.is_demo:
            raise ServedeckError(
                f"group member {member.name!r} is a demo profile; use `servedeck fleet --demo N`"
            )
        deck = open_deck(member.profile)
        probes.append(DeckProbe(deck, label=member.label))
    return probes


class BorrowedDeck(Deck):
    """A host's Deck lent to its full console: closing it leaves the fleet's connection open.

    The console starts its own streams on the shared Host and ends them when it exits;
    only a GPU source the console opened itself is closed here.
    """

    _lent_source: object | None = None
    _apps_interval_s: float | None = None

    async def close(self) -> None:
        if self._gpu_source is not None and self._gpu_source is not self._lent_source:
            await self._gpu_source.aclose()
        if self._apps_interval_s is not None:  # back to the fleet's slower process list
            self._lent_source.apps_interval_s = self._apps_interval_s  # type: ignore[attr-defined]


def borrow_deck(deck: Deck) -> Deck:
    """The same profile, Host and GPU source as `deck`, for another view of that host."""
    borrowed = BorrowedDeck(deck.profile, deck.host, deck._gpu_source)
    borrowed._lent_source = source = deck._gpu_source
    fleet_interval = getattr(source, "apps_interval_s", None)
    if isinstance(fleet_interval, float | int):  # the full console lists processes every tick
        borrowed._apps_interval_s = float(fleet_interval)
        source.apps_interval_s = max(2.0, source.interval_s)  # type: ignore[union-attr]
    return borrowed
