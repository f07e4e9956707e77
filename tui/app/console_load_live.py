"""The Deck's load explainer: a worker samples while a model loads, the diagnosis after ready.

A part of ServedeckApp. The worker runs from the first loading phase until the server is
ready or the load ends without it (failed, stopped, the process gone: the LoadWhy line
says where and why). Once ready, the one-line diagnosis becomes a notification and the
line, and the load is kept: the next load's explanation checks this one's prediction
against what it took.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_guard import console_closing
from tui.app.console_protocol import Console, Part
from tui.app.console_record import RecordPart
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.core.formatting import prediction_error
from tui.serving.load.live import ended_load, final_load
from tui.serving.load.tracker import LOADING_PHASES, LoadProgress, Phase
from widgets.load_why import LoadWhy

if TYPE_CHECKING:  # loaded by the worker, when a load is first seen
    from tui.deck import Deck
    from tui.serving.load.live_watch import LiveLoadWatcher
    from tui.serving.unit.service import UnitState


def _loading(progress: LoadProgress | None, ready: bool, unit: UnitState | None) -> bool:
    """A load runs: the log says so and, where there is a unit, it is active (an old
    log's unfinished load under a stopped unit is not one)."""
    if progress is None or (unit is not None and not unit.is_active):
        return False
    return progress.phase in LOADING_PHASES or (progress.phase == "serving" and not ready)


class LoadLivePart(Part):
    """The live load explainer's worker and the after-ready diagnosis."""

    def __init__(self, deck: Deck, console: Console, record: RecordPart) -> None:
        super().__init__(deck, console)
        self._record = record
        self._running = False
        self.poll_s: float | None = None  # None: tui.serving.load.live_watch.LIVE_POLL_S
        self.watcher: LiveLoadWatcher | None = None  # its samples serve the diagnosis
        self.explained_load_s: float | None = None  # the start of the load last explained

    def watch_if_loading(self) -> None:
        """Called on each load update: start the worker when a load begins; once the
        served model stops, its diagnosis leaves the Deck."""
        # Only a load seen in a loading phase: a console opened on a server that is up
        # but not yet probed would otherwise flash a reading of its long-past "API up".
        console = self.console
        progress = console.progress
        starts = progress is not None and progress.phase in LOADING_PHASES
        if not self._running and starts and _loading(progress, console.ready, console.unit_state):
            self._running = True
            self._watch_load_live()
        elif progress is not None and progress.phase == "stopped":
            line = console.query_one(LoadWhy)
            if line.live is not None and line.live.final and line.live.phase == "serving":
                line.show(None)

    @console_worker("load-live", pane="deck", what="explain the load while it runs")
    async def _watch_load_live(self) -> None:
        from tui.ops.load_explain import checkpoint_path
        from tui.serving.load.live_watch import LIVE_POLL_S, LiveLoadWatcher

        console = self.console
        watcher = LiveLoadWatcher(self.deck.host, checkpoint_path(self.deck))
        self.watcher = watcher
        last = None
        seen_pid: int | None = None
        try:
            while not console_closing(console):
                progress = console.tracker.snapshot()
                unit = console.unit_state
                pid = unit.main_pid if unit is not None else None
                if pid is None and seen_pid is not None:
                    break  # the unit lost its main process: the load ended
                if not _loading(progress, console.ready, unit):
                    break
                seen_pid = pid or seen_pid
                last = await watcher.sample(progress, pid, console.last_gpu)
                if console.ready:
                    break  # the diagnosis takes the line now
                self.post_message(messages.LoadLiveUpdate(last))
                await asyncio.sleep(self.poll_s or LIVE_POLL_S)
            if not console.ready and not console_closing(console):
                state = console.unit_state
                stopped = state is not None and state.active_state == "inactive"
                ended = ended_load(console.tracker.snapshot(), last, None if stopped else seen_pid)
                self.post_message(messages.LoadLiveUpdate(ended))
        finally:
            self._running = False

    def show(self, message: messages.LoadLiveUpdate) -> None:
        live = message.live
        if live is not None and not live.final and self.console.ready:
            return  # a reading taken just before ready: the diagnosis comes next
        self.console.query_one(LoadWhy).show(live)
        self._record.load_live(live)

    @console_worker("load-explain", pane="deck", what="explain the load")
    async def explain_after_ready(self) -> None:
        """Once per ready (off the UI thread): the diagnosis, and the load kept."""
        from tui.ops.load_explain import collect_explain
        from tui.serving.load.history import record_load  # once a load is done, not at start

        console = self.console
        progress = console.tracker.snapshot()
        # A load is a start-to-ready span seen in the log, explained (and kept) once.
        if progress.phase != Phase.SERVING or not progress.timeline:
            return
        started_s = progress.timeline[0].started_at_s
        if self.explained_load_s == started_s:
            return
        self.explained_load_s = started_s
        unit = console.unit_state
        main_pid = unit.main_pid if unit is not None else None
        process_s = unit.started_at_s if unit is not None else None
        try:
            watcher = self.watcher
            seen = watcher.explainer if watcher is not None and watcher.pid == main_pid else None
            explain, model, _path, _error = await collect_explain(
                self.deck,
                progress,
                main_pid,
                first_answer_at_s=time.time(),
                explainer=seen,
                process_started_at_s=process_s,
            )
        except ServedeckError as error:
            console.notify(f"load explainer: {error}", severity="warning")
            self.post_message(messages.LoadLiveUpdate(final_load(f"ready; not explained: {error}")))
            return
        record_load(self.deck.host_label, model, explain)
        off_s = explain.previous_prediction_error_s
        checked = f" (last prediction {prediction_error(off_s)})" if off_s is not None else ""
        console.notify(f"{explain.diagnosis}{checked}", title="Load", timeout=15)
        # The Deck's live line becomes the diagnosis (it showed the load while it ran).
        self.post_message(messages.LoadLiveUpdate(final_load(f"{explain.diagnosis}{checked}")))
