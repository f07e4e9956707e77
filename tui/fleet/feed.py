"""The Fleet pane's rows from every source it was given: an SSH group, a Prometheus server, or both.

Prometheus answers for the hosts it scrapes; the group's members are polled over SSH (the
collector), so one pane holds both and each row says where it came from. A host in both
shows its Prometheus row (the SSH poll keeps its Deck open), and Enter opens its SSH
console. A Prometheus that cannot be asked is a problem line on the pane, never an end of
the refreshes: its hosts seen before stay, marked unreachable, until it answers again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from tui.core.errors import ServedeckError
from tui.fleet.collector import FleetCollector
from tui.fleet.deck_probe import HostProbe
from tui.fleet.model import FleetRow

if TYPE_CHECKING:  # httpx stays out of the import until a Prometheus source is made
    from tui.fleet.prom_history import PrometheusHistory
    from tui.fleet.prometheus import PrometheusFleet


class FleetRowSource(Protocol):
    """What the Fleet pane asks of its rows' source."""

    @property
    def problems(self) -> tuple[str, ...]: ...

    async def refresh(self) -> list[FleetRow]: ...

    def next_interval_s(self, base_s: float) -> float: ...

    def probe(self, name: str) -> HostProbe | None: ...

    async def close(self) -> None: ...


class FleetFeed:
    """Rows from a Prometheus server and/or an SSH collector, one row per host."""

    def __init__(
        self,
        *,
        collector: FleetCollector | None = None,
        prometheus: PrometheusFleet | None = None,
        history: PrometheusHistory | None = None,
    ) -> None:
        self.collector = collector
        self.prometheus = prometheus
        self.history = history
        self._problems: tuple[str, ...] = ()

    @property
    def problems(self) -> tuple[str, ...]:
        """Why a source gave no (fresh) rows in the last refresh, one line each."""
        return self._problems

    async def _prometheus_rows(self) -> tuple[list[FleetRow], str | None]:
        if self.prometheus is None:
            return [], None
        try:
            rows = await self.prometheus.refresh()
        except ServedeckError as error:  # down before any host was seen
            return [], str(error)
        # Prometheus down (rows kept from before), or what its answer left out
        return rows, self.prometheus.last_error or self.prometheus.last_note

    async def refresh(self) -> list[FleetRow]:
        """Prometheus's rows, then the SSH rows of the hosts Prometheus does not have."""
        ssh_rows: list[FleetRow] = []
        if self.collector is not None:
            (prom_rows, problem), ssh_rows = await asyncio.gather(
                self._prometheus_rows(), self.collector.refresh()
            )
        else:
            prom_rows, problem = await self._prometheus_rows()
        seen = {row.host for row in prom_rows}
        self._problems = (problem,) if problem else ()
        return prom_rows + [row for row in ssh_rows if row.host not in seen]

    def next_interval_s(self, base_s: float) -> float:
        if self.collector is not None:
            return self.collector.next_interval_s(base_s)
        return base_s

    def probe(self, name: str) -> HostProbe | None:
        """The member with this name (its SSH Deck), whichever source its row came from."""
        return self.collector.probe(name) if self.collector is not None else None

    async def close(self) -> None:
        if self.collector is not None:
            await self.collector.close()
        if self.prometheus is not None:
            await self.prometheus.aclose()
