"""The console's service log: the follower, its bounded queue and the drain that feeds the load.

A part of ServedeckApp. A worker queues each read of the log as its batch (the source
waits beyond LOG_BACKLOG_LINES); a drain takes up to LOG_DRAIN_LINES a turn of the event
loop and hands each batch to the load tracker, the progress verdict, the recorder, the
restart watch and the log pane, so a flood never holds the loop.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tui.app.console_guard import console_closing
from tui.app.console_health import SourceHealthPart
from tui.app.console_protocol import Console, Part
from tui.app.console_record import RecordPart
from tui.app.console_restart_watch import RestartWatchPart
from tui.app.console_serving import ServingPart
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.core.redact import redact_text
from tui.hints import setup_hint
from tui.logs.line import LineQueue, LogLine, texts_of
from widgets.log_pane import LogPane
from widgets.sure_timer import set_sure_timer

if TYPE_CHECKING:
    from textual.timer import Timer

    from tui.deck import Deck

LOG_DRAIN_S = 0.1
LOG_DRAIN_LINES = 2000  # per turn of the event loop: a flood's backlog must not hold it
LOG_BACKLOG_LINES = 20_000  # read but not yet drained; the log source waits beyond it
RETRY_S = 2.0  # a log source that failed to start is tried again this often


class LogPart(Part):
    """The service log's follower and drain."""

    def __init__(
        self,
        deck: Deck,
        console: Console,
        sources: SourceHealthPart,
        record: RecordPart,
        restart_watch: RestartWatchPart,
        serving: ServingPart,
    ) -> None:
        super().__init__(deck, console)
        self._sources = sources
        self._record = record
        self._restart_watch = restart_watch
        self._serving = serving
        self.incoming = LineQueue()  # read, not yet drained: as the batches read
        self._drain_timer: Timer | None = None  # the next drain, while one is due
        self._drain_soon = False  # that drain is the flood's, 1 ms away

    @console_worker("log", pane="log", what="follow the service log")
    async def follow(self) -> None:
        source = self.deck.log_batches(initial_lines=2000, follow=True)
        if source is None:
            hint = setup_hint(self.profile) or (
                "no log source: set service.unit or service.log_file",
            )
            self.console.query_one(LogPane).add_lines([LogLine(text) for text in hint])
            return
        try:
            async for batch in source:  # a read at a time: one step per read, not per line
                while (  # memory stays bounded: the source waits for the drain
                    self.incoming and len(self.incoming) + len(batch) > LOG_BACKLOG_LINES
                ):
                    await asyncio.sleep(LOG_DRAIN_S / 20)
                self.incoming.add(batch)
                self._schedule_drain()
        except ServedeckError as error:
            if not self._sources.health["log"].failing:  # once per outage; the note counts down
                failed = redact_text(f"servedeck: log source failed: {error}")
                self.incoming.append(LogLine(failed))
            self._sources.set("log", str(error), RETRY_S)
            self.console.poll_later(RETRY_S, self.follow, "log-retry")

    def _schedule_drain(self) -> None:
        """Drain LOG_DRAIN_S after the first line (a trickle is drawn in one go), or at once
        when a drain's worth is waiting: in a flood, waiting gathers nothing more."""
        soon = len(self.incoming) >= LOG_DRAIN_LINES
        if self._drain_timer is not None:
            if self._drain_soon or not soon:
                return
            self._drain_timer.stop()
        self._drain_soon = soon
        delay_s = 0.001 if soon else LOG_DRAIN_S
        self._drain_timer = set_sure_timer(self.console, delay_s, self._drain, name="log-drain")

    def _drain(self) -> None:
        self._drain_timer = None
        console = self.console
        if console_closing(console):  # a timer may fire while the app shuts down
            return
        batches = self.incoming.take(LOG_DRAIN_LINES)
        if self.incoming:  # a flood: the rest after the loop has run once more
            self._drain_soon = True
            self._drain_timer = set_sure_timer(console, 0.001, self._drain, name="log-drain")
        serving = self._serving
        if batches:
            self._sources.ok("log")
            serving.load_as_of = None  # new lines: the strip is of now again
        if batches and not self.deck.host.is_local:
            self._sources.host_reached()  # lines arrive: the host answers again
        pane = console.query_one(LogPane)
        for batch in batches:  # as they were read (a LineBatch keeps its columns)
            serving.tracker.feed_many(batch)
            serving.engine_progress.feed_log(texts_of(batch))
            self._record.lines(batch)
            self._restart_watch.observe(lines=batch)
            pane.add_lines(batch)
        serving.update_load()
