"""The console's GPUs: the poll, the history and the GPU pane's redraw.

A part of ServedeckApp. One long-lived worker samples the Deck's GPU source every
`gpu.refresh_s` (a timer, a worker and a message per tick would cost more main-thread
time than drawing the tick). Each sample is recorded, added to the history, handed to the
load tracker and the hardware watch, and drawn only while the Deck is shown. A failing
source keeps the last good sample on screen; the Deck's note gives its age.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.app.console_guard import console_closing
from tui.app.console_hardware import HardwarePart
from tui.app.console_health import SourceHealthPart
from tui.app.console_protocol import Console, Part
from tui.app.console_record import RecordPart
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.gpu.history import GpuHistory
from tui.gpu.model import GpuBoxSnapshot, total_memory_bytes
from widgets.gpu_pane import GpuPane

if TYPE_CHECKING:
    from tui.deck import Deck
    from tui.serving.load.tracker import LoadTracker


class GpusPart(Part):
    """The GPU poll, the sample on screen and the history its trends come from."""

    def __init__(
        self,
        deck: Deck,
        console: Console,
        sources: SourceHealthPart,
        record: RecordPart,
        hardware: HardwarePart,
        tracker: LoadTracker,
        first_sample: Callable[[], object] | None = None,
    ) -> None:
        super().__init__(deck, console)
        # Told once, at the first good sample: the process list needs the GPUs' pids, and
        # until it is taken the footer cannot know whether K has anything to clean up.
        self._first_sample = first_sample
        self._sources = sources
        self._record = record
        self._hardware = hardware
        self._tracker = tracker  # the load reads the GPUs' memory as it fills
        self.history = GpuHistory(target_fraction=0.9)
        self.last: GpuBoxSnapshot | None = None  # on screen (the last good while failing)
        self.last_good: GpuBoxSnapshot | None = None
        self._pane: GpuPane | None = None  # asked every tick: looked up once

    @console_worker("gpu", pane="gpu", what="sample the GPUs")
    async def poll(self) -> None:
        # One long-lived loop: a timer, a worker and a message per tick would cost
        # more main-thread time than drawing the tick.
        while not console_closing(self.console):
            try:
                source = await self.deck.gpu_source()
                snapshot = await source.sample()
            except ServedeckError as error:
                snapshot = GpuBoxSnapshot("none", time.time(), available=False, error=str(error))
                self._sources.set("gpu", str(error), self.profile.gpu.refresh_s)
            else:
                if snapshot.available:
                    self._sources.ok("gpu")
                elif self.last_good is not None:
                    reason = snapshot.error or "no GPUs"
                    self._sources.set("gpu", reason, self.profile.gpu.refresh_s)
            self.show(snapshot)
            await asyncio.sleep(self.profile.gpu.refresh_s)

    def show(self, snapshot: GpuBoxSnapshot) -> None:
        if console_closing(self.console):
            return
        if snapshot.available:
            first, self.last_good = self.last_good is None, snapshot
            if first and self._first_sample is not None:
                self._first_sample()
        elif self.last_good is not None:
            # The source failed: keep the last good sample on screen; the note gives its age.
            return
        self.last = snapshot
        self._record.gpu(snapshot)
        self._hardware.watch(snapshot)
        self.history.add(snapshot)
        if snapshot.available:
            used_bytes, _ = total_memory_bytes(snapshot.samples)
            self._tracker.observe_memory(used_bytes, snapshot.taken_at_s)
        if self.console.tab_visible("deck"):
            self.redraw(snapshot)

    def redraw(self, snapshot: GpuBoxSnapshot | None = None) -> None:
        """Draw a sample (the one on screen by default) with the history's trends."""
        snapshot = snapshot or self.last
        if snapshot is None:
            return
        if self._pane is None:
            self._pane = self.console.query_one(GpuPane)
        self._pane.update_view(snapshot, self.history.trends())
