"""The Deck's load explainer while a model loads: a worker samples, the LoadWhy line draws.

The worker runs from the first loading phase until the server is ready (then the
after-ready diagnosis replaces the line, tui/app/load_explain_watch.py) or the load
ends without it (failed, stopped, the process gone: the line says where and why).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_guard import console_closing, while_open
from tui.app.console_workers import console_worker
from tui.app.parts import ConsoleParts
from tui.serving.load.tracker import LOADING_PHASES, LoadProgress
from widgets.load_why import LoadWhy

if TYPE_CHECKING:  # loaded by the worker, when a load is first seen
    from tui.serving.load.live_watch import LiveLoadWatcher
    from tui.serving.service import UnitState


def _loading(progress: LoadProgress | None, ready: bool, unit: UnitState | None) -> bool:
    """A load runs: the log says so and, where there is a unit, it is active (an old
    log's unfinished load under a stopped unit is not one)."""
    if progress is None or (unit is not None and not unit.is_active):
        return False
    return progress.phase in LOADING_PHASES or (progress.phase == "serving" and not ready)


class LoadLiveMixin(ConsoleParts):
    """Mixed into ServedeckApp (its tracker, unit state, last GPU sample and Deck)."""

    _load_live_running: bool = False
    load_live_poll_s: float | None = None  # None: tui.serving.load.live_watch.LIVE_POLL_S
    load_live_watcher: LiveLoadWatcher | None = None

    def _watch_load_live_if_loading(self) -> None:
        """Called on each load update: start the worker when a load begins; once the
        served model stops, its diagnosis leaves the Deck."""
        # Only a load seen in a loading phase: a console opened on a server that is up
        # but not yet probed would otherwise flash a reading of its long-past "API up".
        progress = self.progress
        starts = progress is not None and progress.phase in LOADING_PHASES
        if (
            not self._load_live_running
            and starts
            and _loading(progress, self.ready, self.unit_state)
        ):
            self._load_live_running = True
            self._watch_load_live()
        elif self.progress is not None and self.progress.phase == "stopped":
            line = self.query_one(LoadWhy)
            if line.live is not None and line.live.final and line.live.phase == "serving":
                line.show(None)

    @console_worker("load-live", pane="deck", what="explain the load while it runs")
    async def _watch_load_live(self) -> None:
        from tui.ops.load_explain import checkpoint_path
        from tui.serving.load.live import ended_load
        from tui.serving.load.live_watch import LIVE_POLL_S, LiveLoadWatcher

        watcher = LiveLoadWatcher(self.deck.host, checkpoint_path(self.deck))
        self.load_live_watcher = watcher  # its samples serve the explanation after ready
        last = None
        seen_pid: int | None = None
        try:
            while not console_closing(self):
                progress = self.tracker.snapshot()
                pid = self.unit_state.main_pid if self.unit_state is not None else None
                if pid is None and seen_pid is not None:
                    break  # the unit lost its main process: the load ended
                if not _loading(progress, self.ready, self.unit_state):
                    break
                seen_pid = pid or seen_pid
                last = await watcher.sample(progress, pid, self.last_gpu)
                if self.ready:
                    break  # the diagnosis takes the line now
                self.post_message(messages.LoadLiveUpdate(last))
                await asyncio.sleep(self.load_live_poll_s or LIVE_POLL_S)
            if not self.ready and not console_closing(self):
                state = self.unit_state
                stopped = state is not None and state.active_state == "inactive"
                ended = ended_load(self.tracker.snapshot(), last, None if stopped else seen_pid)
                self.post_message(messages.LoadLiveUpdate(ended))
        finally:
            self._load_live_running = False

    @while_open
    def on_servedeck_app_load_live_update(self, message: messages.LoadLiveUpdate) -> None:
        live = message.live
        if live is not None and not live.final and self.ready:
            return  # a reading taken just before ready: the diagnosis comes next
        self.query_one(LoadWhy).show(live)
        self._record_load_live(live)
