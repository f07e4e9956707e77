"""The console's host overview: one loop reads it, the Overview pane and the header show it.

A part of ServedeckApp. The whole overview is read once per connection (and when asked
with `r`, or after a new boot, which wake the loop), then only its changing numbers every
`overview_interval_s`. A failed read marks the connection failing (one toast per outage)
and keeps the last good overview on screen with its age.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_guard import console_closing
from tui.app.console_health import HOST_RETRY_S, SourceHealthPart
from tui.app.console_protocol import Console, Part
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from widgets.header_bar import HeaderBar
from widgets.host_overview import HostOverviewView

if TYPE_CHECKING:
    from tui.deck import Deck
    from tui.hostfacts.hostinfo import HostOverview


class OverviewPart(Part):
    """The host overview's loop and the Overview pane."""

    def __init__(
        self, deck: Deck, console: Console, sources: SourceHealthPart, interval_s: float
    ) -> None:
        super().__init__(deck, console)
        self._sources = sources
        self.interval_s = interval_s
        self._overview: HostOverview | None = None
        self._full_due = False
        self._wake = asyncio.Event()
        self._last_good: HostOverview | None = None
        self._undrawn = False  # a good overview came while its pane was hidden

    def mount(self) -> None:
        self.console.query_one(HostOverviewView).show_waiting(
            f"Connecting to {self.profile.host.route} ..."
        )

    @console_worker("overview", pane="overview", what="read the host overview")
    async def poll(self) -> None:
        # One loop for the console's life: the whole overview once per connection (and
        # when asked with `r`, which wakes it), then only its changing numbers. A worker
        # per poll, re-armed by a timer, raced with `r`: a read cancelled just as it
        # finished (asyncio.wait_for in 3.11 then returns the result) overwrote the request.
        while not console_closing(self.console):
            self._wake.clear()
            full_due, self._full_due = self._full_due, False
            try:
                if full_due or self._overview is None:
                    overview = await self.deck.overview()
                else:
                    overview = await self.deck.refresh_overview(self._overview)
            except ServedeckError as error:
                self._overview = None  # after a failure the host may be another boot: ask again
                self.post_message(messages.HostFailed(str(error)))
                wait_s = HOST_RETRY_S
            else:
                self._overview = overview
                self.post_message(messages.OverviewReady(overview))
                wait_s = self.interval_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait_s)

    def wake(self) -> None:
        """Read now rather than at the next interval (a reconnect)."""
        self._wake.set()

    def read_whole_host(self) -> None:
        """The overview reads the whole host again now (asked for, or a new boot)."""
        self._full_due = True
        self._wake.set()

    def refresh_asked(self) -> None:
        """`r`: the whole overview again, not only its numbers, said at once (SSH takes seconds)."""
        self.console.notify(
            "refreshing the host overview and processes...", title="Refresh", timeout=3
        )
        self.console.query_one(HeaderBar).connection_state = "connecting"
        self.read_whole_host()

    def shown(self, message: messages.OverviewReady) -> None:
        self._sources.host_reached()
        self.console.query_one(HeaderBar).connection_detail = message.overview.hostname
        self._last_good = message.overview
        view = self.console.query_one(HostOverviewView)
        if self.console.tab_visible("overview"):
            view.show_overview(message.overview)
        else:
            # Drawn when its pane is shown: a Static's update re-lays out the whole screen,
            # the largest main-thread cost of an idle console, for a pane nobody sees.
            view.stale_note = ""
            self._undrawn = True

    def redraw(self) -> None:
        """Its pane is shown: draw the overview that came while it was hidden."""
        if self._undrawn and self._last_good is not None:
            self._undrawn = False
            self.console.query_one(HostOverviewView).show_overview(self._last_good)

    def failed(self, message: messages.HostFailed) -> None:
        host = self._sources.health
        was_failing = host["host"].failing
        self._sources.set("host", message.message, self._sources.host_retry_in_s())
        reason = host["host"].reason
        view = self.console.query_one(HostOverviewView)
        if self._last_good is not None:  # keep what is known; say how old it is
            self._undrawn = False
            view.show_overview(self._last_good, host["host"].describe())
        else:
            view.show_error(reason)
        if not was_failing:  # one toast per outage; each retry shows only in the header
            self.console.notify(reason, title="Host unreachable", severity="error", timeout=8)
