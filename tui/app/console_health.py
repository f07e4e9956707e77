"""The console's source health: stale panes with their age, the header's reconnect countdown.

A part of ServedeckApp. Each source (the connection, GPUs, service state, log,
readiness, metrics, process list) has a SourceHealth (tui.health, no Textual); polls
report success or failure here, and this draws it: the header's connection state and
countdown, a note on the Deck, the Processes pane's status. A worker that raised
(console_workers.WorkerFailed) becomes a state here, a toast and an audit record when
the operator asked for the work (the console restarts its polls).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.widgets import Static

from tui.app.console_guard import console_closing
from tui.app.console_protocol import Console, Part
from tui.app.console_workers import WorkerFailed
from tui.core.audit import append_audit
from tui.source_health import Outage, SourceHealth, reconnected_text
from widgets.header_bar import HeaderBar

if TYPE_CHECKING:
    from textual.timer import Timer

    from tui.deck import Deck

# While the host is unreachable the overview asks again this often (a failed attempt is
# cheap: the SSH host fails fast during its backoff), so the console resumes soon after.
HOST_RETRY_S = 1.0
# How often the console looks at the connection and redraws countdowns: a cut shows
# within a tick, inside the 2 s an operator should wait to see it; countdowns are in
# whole seconds.
HEALTH_TICK_S = 1.0
# After the host answers again, the header says it reconnected (and after how long a cut)
# for this long: a cut that a fast reconnect ends within a tick is still seen.
RECONNECTED_NOTE_S = 15.0
# The outages kept in memory: the header reads the last one, the fault tests the rest.
_OUTAGES_KEPT = 50
# Polls whose worker died unexpectedly are started again after this long.
POLL_RESTART_S = 2.0


def initial_health() -> dict[str, SourceHealth]:
    """Every source the console watches, healthy and not yet heard from."""
    return {
        "host": SourceHealth("connection", noun="contact"),
        "gpu": SourceHealth("GPU source"),
        "log": SourceHealth("service log", noun="line"),
        "service": SourceHealth("service state", noun="reading"),
        "readiness": SourceHealth("readiness probe", noun="answer"),
        "metrics": SourceHealth("metrics", noun="sample"),
        "procs": SourceHealth("process list", noun="listing"),
        "kernel": SourceHealth("kernel log (XIDs)", noun="reading"),
    }


class SourceHealthPart(Part):
    """Each source's health, the host's outages, and the header, Deck note and Processes
    status that show them."""

    def __init__(
        self,
        deck: Deck,
        console: Console,
        *,
        on_cut: Callable[[], None],
        wake_overview: Callable[[], None],
        gpu_seen: Callable[[], bool],
    ) -> None:
        super().__init__(deck, console)
        self._on_cut = on_cut  # a connection was cut: the load strip keeps its last reading
        self._wake_overview = wake_overview  # reconnect now rather than at the next overview
        self._gpu_seen = gpu_seen  # a good GPU sample was shown: a GPU failure is stale data
        self.health = initial_health()
        self.service_unknown_since_s: float | None = None
        self.host_outages: list[Outage] = []
        self._seen_losses = 0
        self._procs_status = ""
        self._header_bar: HeaderBar | None = None  # read every tick: looked up once
        self._clock: Timer | None = None

    @property
    def _header(self) -> HeaderBar:
        """The header, found once: a lookup walks the whole DOM, and the clock asks each second."""
        if self._header_bar is None:
            self._header_bar = self.console.query_one(HeaderBar)
        return self._header_bar

    def start(self) -> None:
        self._clock = self.console.set_interval(HEALTH_TICK_S, self._tick, name="health-clock")

    def host_reached(self) -> None:
        """Any answer from the host ends an outage: the header says connected again."""
        header = self._header
        if self.health["host"].failing or header.connection_state != "connected":
            self.set("host", None)
        else:
            self.ok("host")

    def ok(self, source: str) -> None:
        """A good delivery: ends an outage (redraw), else only notes the time (no redraw)."""
        if self.health[source].failing:
            self.set(source, None)
        else:
            self.health[source] = self.health[source].succeeded()

    def set(self, source: str, failure: str | None, retry_in_s: float | None = None) -> None:
        """Record a source's success (failure None) or failure and redraw what shows it."""
        before = self.health[source]
        after = before.succeeded() if failure is None else before.failed(failure, retry_in_s)
        self.health[source] = after
        if self._clock is not None:
            self._clock.resume()  # a countdown or an age to move (paused by _tick when none)
        if source == "host" and after.failing != before.failing:
            self._note_outage(after)
        if source == "service":
            if failure is None:
                self.service_unknown_since_s = None
            elif self.service_unknown_since_s is None:
                self.service_unknown_since_s = after.failed_since_s
        self.render()

    def show_procs_status(self, status: str) -> None:
        """The Processes pane's status line (a failing listing adds its age to it)."""
        self._procs_status = status
        self.console.query_one("#procs-status", Static).update(status)

    def _note_outage(self, host: SourceHealth) -> None:
        """An outage starts (the host just failed) or ends (it just answered)."""
        now_mono_s = time.monotonic()
        if host.failing:
            self.host_outages.append(Outage(now_mono_s, time.time(), host.reason))
            del self.host_outages[:-_OUTAGES_KEPT]
            if host.last_ok_at_s is not None:  # a connection was cut, not one never made
                self._on_cut()
        elif self.host_outages and self.host_outages[-1].ended_mono_s is None:
            self.host_outages[-1] = self.host_outages[-1].ended(now_mono_s)

    def _reconnected_note(self) -> str:
        """The header's note while an outage ended less than RECONNECTED_NOTE_S ago."""
        last = self.host_outages[-1] if self.host_outages else None
        if last is None or last.ended_mono_s is None:
            return ""
        if time.monotonic() - last.ended_mono_s > RECONNECTED_NOTE_S:
            return ""
        return reconnected_text(last)

    def _tick(self) -> None:
        """Countdowns and ages move while something is failing: redraw them each tick.

        It also watches the SSH connection itself: a cut connection shows at once, not
        only when the next poll that needs it fails; and the first poll after it is back
        ends the outage without waiting for a full overview.
        """
        if console_closing(self.console):
            return
        connected = getattr(self.deck.host, "connected", None)
        losses = getattr(self.deck.host, "connection_losses", 0)
        lost, self._seen_losses = losses > self._seen_losses, losses
        host = self.health["host"]
        if (lost or connected is False) and host.last_ok_at_s is not None and not host.failing:
            self.set("host", "connection lost", self.host_retry_in_s())
            self._wake_overview()  # reconnect now rather than at the next overview
        elif connected is True and host.failing and not lost:
            self.host_reached()
            self._wake_overview()  # and read the host again (it may have rebooted)
        # A countdown or a reconnected note on the header is redrawn until it clears.
        header = self._header
        if any(h.failing for h in self.health.values()) or header.countdown:
            self.render()
        elif connected is None and self._clock is not None:
            # No connection to watch (a local host) and nothing to count down: the clock
            # sleeps until the next failure (set) instead of waking the loop every second.
            self._clock.pause()

    def render(self) -> None:
        if console_closing(self.console):
            return
        header = self._header
        host = self.health["host"]
        if host.failing:
            header.connection_state = "unreachable" if host.failures <= 1 else "reconnecting"
            wait_s = self._reconnect_in_s()
            header.countdown = f"retry in {wait_s:.0f} s" if wait_s is not None else ""
        else:
            header.connection_state = "connected" if host.last_ok_at_s else "connecting"
            header.countdown = self._reconnected_note()
        notes = [
            self.health[name].describe()
            for name in ("host", "gpu", "log", "readiness", "metrics")  # service: its own line
            if self.health[name].failing and (name != "gpu" or self._gpu_seen())
        ]
        note = self.console.query_one("#deck-note", Static)
        note.update("\n".join(notes))
        note.display = bool(notes)
        procs = self.health["procs"]
        if procs.failing:
            shown = f"{self._procs_status} · " if self._procs_status else ""
            self.console.query_one("#procs-status", Static).update(shown + procs.describe())

    def host_retry_in_s(self) -> float:
        """When the next connection attempt will be made: the SSH backoff, else the poll's."""
        host_wait = getattr(self.deck.host, "reconnect_in_s", None)
        wait_s = host_wait() if callable(host_wait) else None
        return max(HOST_RETRY_S, wait_s or 0.0)

    def _reconnect_in_s(self) -> float | None:
        """Seconds to the next connection attempt: the SSH host's backoff, else the poll's."""
        host_wait = getattr(self.deck.host, "reconnect_in_s", None)
        wait_s = host_wait() if callable(host_wait) else None
        retry_at_s = self.health["host"].retry_at_s
        poll_wait_s = None if retry_at_s is None else max(0.0, retry_at_s - time.time())
        if wait_s is None or poll_wait_s is None:
            return wait_s if poll_wait_s is None else poll_wait_s
        return max(wait_s, poll_wait_s)  # the first poll once the backoff allows it

    def worker_failed(self, message: WorkerFailed) -> None:
        """A worker raised: a state on its pane, and a toast and audit record when asked for."""
        if message.pane in self.health:
            self.set(message.pane, message.reason, POLL_RESTART_S)
        if message.user_action:
            self.console.notify(
                f"Tried to {message.what}; it failed: {message.reason}. Nothing else was done.",
                title="Action failed",
                severity="error",
                timeout=10,
            )
            append_audit(
                "console.action_failed",
                self.deck.host_label,
                {"action": message.what, "error": message.reason},
            )
