"""The console's Tune view: a tune.toml planned, confirmed, run in a worker, cancelled safely.

A part of ServedeckApp. U asks for the space (the profile's `tune.toml` beside it, or the
example), shows the Plan's preflight and runs nothing until confirmed; the run is
`tui.tune.session.tune_on_deck`, the same as `servedeck tune` (a crashed tune's drop-in
undone first, each start and the result recorded), in a worker, its board drawn by
TuneScreen. A cancel (asked first) cancels that worker: run_tune's own `finally` stops the
load, removes the drop-in and puts the service back as it was, exactly as SIGTERM does
to the command. Refused in a read-only console.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.app import messages
from tui.app.console_protocol import Console, Part
from tui.app.console_workers import console_worker, failure_text
from tui.core.errors import ServedeckError
from tui.core.formatting import duration_compact

if TYPE_CHECKING:  # the Tune view loads at U: its driver brings httpx, its record sqlite3
    from textual.worker import Worker

    from tui.app.console_record import RecordPart
    from tui.deck import Deck
    from tui.record.feed import RecordFeed
    from tui.screens.tune import TuneScreen
    from tui.tune.preflight import PlannedConfig
    from tui.tune.progress import TuneBoard
    from tui.tune.space import TuneSpace

BOARD_TICK_S = 0.5
TABLE_MIN_WIDTH = 60
CLOSE_RESTORE_S = 120.0  # quitting mid-tune: the unit is put back before the console goes


class TunePart(Part):
    """One tune at a time: its board, its worker and the screen that draws it."""

    def __init__(self, deck: Deck, console: Console, record: RecordPart) -> None:
        super().__init__(deck, console)
        self.record = record
        self.board: TuneBoard | None = None
        self.worker: Worker[Any] | None = None
        self.screen: TuneScreen | None = None
        self._title = ""

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.is_finished

    # --- U: ask, plan, confirm ---------------------------------------------------------
    def open(self) -> None:
        if self.profile.read_only:  # the key is hidden read-only; the palette reaches here
            self.console.refuse_read_only("palette", "Tune", "tune")
            return
        if self.board is not None and self.running:
            self._show_screen()
            return
        if not self.profile.service.unit or self.deck.service() is None:
            self.console.notify(
                f"profile {self.profile.name} names no unit: nothing to tune",
                title="Tune",
                severity="warning",
            )
            return
        from tui.screens.tune import TuneSpaceScreen
        from tui.tune.space import default_space_path

        default = default_space_path(self.profile.path)
        self.console.push_screen(TuneSpaceScreen(str(default)), self._space_chosen)

    def _space_chosen(self, path: str | None) -> None:
        if path:
            self._plan(path)

    @console_worker("tune-plan", pane="tune", what="plan the tune", user_action=True)
    async def _plan(self, path: str) -> None:
        from tui.screens.tune import TuneConfirmScreen
        from tui.tune.preflight import plan_for_deck, plan_lines
        from tui.tune.space import load_space

        try:
            space = load_space(Path(path).expanduser())
            planned = await plan_for_deck(self.deck, space)
        except ServedeckError as error:
            self.console.notify(failure_text(str(error)), title="Tune", severity="error")
            return
        runnable = sum(item.runnable for item in planned)
        unit = self.profile.service.unit
        title = f"Run {runnable} of {len(planned)} configuration(s) on {self.deck.host_label}?"
        note = (
            f"Objective: {space.objective}; budget {duration_compact(space.budget_s)}, "
            f"each load's deadline {duration_compact(space.deadline_s)}. Each configuration "
            f"is a drop-in for {unit} (its unit file is never edited); the service is "
            "stopped now and put back as it was at the end, and on a cancel."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._start(space, planned)

        self.console.push_screen(
            TuneConfirmScreen(title, plan_lines(planned), note, runnable), answered
        )

    # --- the run ------------------------------------------------------------------------
    def _start(self, space: TuneSpace, planned: tuple[PlannedConfig, ...]) -> None:
        if self.profile.read_only or self.running:
            return
        from tui.tune.progress import TuneBoard

        self.board = TuneBoard(planned)
        self._title = f"Tune {Path(space.path).name} on {self.deck.host_label} ({space.objective})"
        self.screen = None
        self._show_screen()
        self.worker = self._run(space, planned, self.board)

    @console_worker("tune", pane="tune", what="run the tune", user_action=True)
    async def _run(
        self, space: TuneSpace, planned: tuple[PlannedConfig, ...], board: TuneBoard
    ) -> None:
        from tui.tune.results import result_lines
        from tui.tune.session import tune_on_deck

        ticker = asyncio.ensure_future(self._tick(board))
        try:
            outcomes = await tune_on_deck(
                self.deck, space, planned, say=board.say, board=board, held_feed=self._held_feed()
            )
            view = self.screen  # its own width; hidden (q), the screen's less the frame's edges
            shown = view is not None and view.is_mounted
            width = view.result_width() if view and shown else self.console.screen.size.width - 10
            board.finish(result_lines(outcomes, space.objective, max(TABLE_MIN_WIDTH, width)))
        except asyncio.CancelledError:
            board.finish(["tune cancelled: the unit is as it was"], cancelled=True)
            raise
        except ServedeckError as error:
            board.say(f"tune failed: {failure_text(str(error))}")
            board.finish([f"tune failed: {failure_text(str(error))}; the unit is as it was"])
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            self.post_message(messages.TuneUpdate(board.snapshot()))

    async def _tick(self, board: TuneBoard) -> None:
        while True:
            self.post_message(messages.TuneUpdate(board.snapshot()))
            await asyncio.sleep(BOARD_TICK_S)

    def _held_feed(self) -> RecordFeed | None:
        """The console's recording feed when it holds the recording (it records the loads
        itself); None: the tune records its attempts and result as `servedeck tune` does."""
        recording = self.record.recording
        return recording.feed if recording is not None and recording.recorder else None

    def show(self, message: messages.TuneUpdate) -> None:
        if self.screen is not None:
            self.screen.show(message.snapshot)
        if message.snapshot.finished:
            self.console.refresh_bindings()

    def _show_screen(self) -> None:
        """The run's view on top (a new one each time: a dismissed screen is gone)."""
        if self.board is None or (self.screen is not None and self.console.screen is self.screen):
            return
        from tui.screens.tune import TuneScreen

        self.screen = TuneScreen(self._title, self.cancel, self.board.snapshot())
        self.console.push_screen(self.screen)

    # --- Esc/c: cancel, asked first -----------------------------------------------------
    def cancel(self) -> None:
        if not self.running or self.board is None:
            self.console.notify("No tune is running.", title="Tune", timeout=3)
            return
        from tui.screens.tune import TuneCancelScreen

        board, worker = self.board, self.worker

        def answered(yes: bool | None) -> None:
            if yes and worker is not None and not worker.is_finished:
                board.cancelling()
                board.say("cancelling: the load stops, the unit is restored")
                worker.cancel()

        self.console.push_screen(
            TuneCancelScreen(self.profile.service.unit or "the unit"), answered
        )

    async def close(self) -> None:
        """Quitting mid-tune cancels it and waits for the restore (the marker covers a kill)."""
        worker = self.worker
        if worker is None or worker.is_finished:
            return
        worker.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(worker.wait(), CLOSE_RESTORE_S)
