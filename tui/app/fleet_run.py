"""The Fleet's loop: the Fleet pane, then a host's full console, then the Fleet again.

The collector (tui.fleet.collector) owns one Deck per host and outlives the apps: a
chosen host's console (ServedeckApp) runs on a borrowed view of that host's Deck in the
same event loop, so the host's SSH connection is reused, not reopened.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tui.app.fleet_app import BASE_INTERVAL_S, FleetApp
from tui.deck import Deck
from tui.fleet.collector import DeckProbe, FleetCollector, HostProbe, borrow_deck
from tui.fleet.feed import FleetFeed, FleetRowSource
from tui.fleet.model import FleetRow

if TYPE_CHECKING:  # httpx is imported only when a Prometheus source is made
    from tui.fleet.prom_history import PrometheusHistory
    from tui.fleet.prometheus import PromFleetConfig


async def fleet_console(
    collector: FleetRowSource,
    *,
    read_only: bool = False,
    interval_s: float = BASE_INTERVAL_S,
    history: PrometheusHistory | None = None,
    title: str = "",
    keys: Mapping[str, str] | None = None,
) -> int:
    """The fleet, then a host's console, then the fleet again, until the operator quits."""
    from tui.app import ServedeckApp

    rows: list[FleetRow] = []
    while True:
        app = FleetApp(
            collector, rows=rows, interval_s=interval_s, history=history, title=title, keys=keys
        )
        chosen = await app.run_async()
        rows = app.rows
        if not chosen:
            return 0
        probe = collector.probe(chosen)
        deck = await _deck_for(probe, read_only)
        if deck is None:
            continue
        await ServedeckApp(deck.profile, deck).run_async()


async def _deck_for(probe: HostProbe | None, read_only: bool) -> Deck | None:
    """A real host's Deck, borrowed; a light demo box gets a full simulated box of its own
    (with its model and state); an unreachable one opens nothing."""
    if isinstance(probe, DeckProbe):
        return borrow_deck(probe.deck)
    if probe is None:
        return None
    from tui.fleet.demo import DemoProbe, full_demo_deck

    if not isinstance(probe, DemoProbe) or probe.box.kind == "unreachable":
        return None  # nothing to open: the box cannot be reached
    return await asyncio.to_thread(full_demo_deck, probe.box, read_only=read_only)


def run_fleet_console(
    probes: Sequence[HostProbe],
    *,
    host_timeout_s: float = 4.0,
    read_only: bool = False,
    prometheus: PromFleetConfig | None = None,
    title: str = "",
    keys: Mapping[str, str] | None = None,
) -> int:
    """The Fleet pane over SSH probes, a Prometheus server, or both (one row per host).

    `keys` remaps the Fleet's keys by binding id (a group file's [keys] table).
    """

    async def main() -> int:
        collector = FleetCollector(probes, host_timeout_s=host_timeout_s) if probes else None
        feed = FleetFeed(collector=collector)
        if prometheus is not None:
            from tui.fleet.prom_history import PrometheusHistory
            from tui.fleet.prometheus import PrometheusFleet

            feed.prometheus = PrometheusFleet(prometheus)
            feed.history = PrometheusHistory(feed.prometheus)
        try:
            return await fleet_console(
                feed, read_only=read_only, history=feed.history, title=title, keys=keys
            )
        finally:
            await feed.close()

    return asyncio.run(main())
