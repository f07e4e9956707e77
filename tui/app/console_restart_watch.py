"""The console's restart watch: the guard before S/R, and the restart-loop detector.

S/R with leftovers holding GPU memory or the port opens the guard's refusal (offering K)
instead of the confirm dialog; the listing runs in a worker. Each unit read and log
batch feeds the detector; a new loop becomes an incident and an alert.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tui.app.console_protocol import Console, Part
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.logs.line import texts_of
from tui.screens.guard_refused import GuardRefusedScreen
from tui.serving.unit.restart_loop import RestartLoopDetector, record

if TYPE_CHECKING:
    from tui.deck import Deck
    from tui.logs.line import LogLine
    from tui.serving.unit.service import UnitState


class RestartWatchPart(Part):
    """The guard before a start or restart, and the restart loops seen in the unit and log."""

    def __init__(self, deck: Deck, console: Console, kill_leftovers: Callable[[], None]) -> None:
        super().__init__(deck, console)
        self._kill_leftovers = kill_leftovers  # K, chosen in the guard's refusal
        self._detector = RestartLoopDetector(self.profile.service.unit or self.profile.name)

    @console_worker(
        "service-guard",
        pane="service",
        what=lambda part, verb, ask: f"check for leftovers before {verb}",
        user_action=True,
    )
    async def guard_then_confirm(self, verb: str, confirm: Callable[[], None]) -> None:
        """Open the confirm dialog only when the guard passes; else the refusal offering K."""
        from tui.ops.restart_guard import check
        from tui.serving.unit.restart_guard import GUARDED_VERBS

        if verb not in GUARDED_VERBS:
            confirm()
            return
        try:
            verdict = await check(self.deck, verb)
        except ServedeckError as error:
            self.console.notify(
                f"restart guard could not list leftovers: {error}", severity="warning"
            )
            confirm()
            return
        if not verdict.blocked:
            confirm()
            return

        def answered(kill_first: bool | None) -> None:
            if kill_first:
                self._kill_leftovers()

        self.console.push_screen(GuardRefusedScreen(verdict), answered)

    def observe(self, state: UnitState | None = None, lines: Sequence[LogLine] = ()) -> None:
        """Feed the detector a unit read or a log batch; a new loop is recorded and alerted."""
        if state is not None:
            self._detector.observe(state.n_restarts, time.time())
        self._detector.feed(texts_of(lines))
        loop = self._detector.check()
        if loop is not None:
            record(loop, self.deck.host.label)
            self.console.notify(loop.message(), title="Restart loop", severity="error", timeout=30)
