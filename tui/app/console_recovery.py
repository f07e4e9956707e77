"""The console's recovery from a worker that raised: a state on its pane, its poll restarted.

A part of ServedeckApp. `console_worker` turns any exception into a `WorkerFailed`
message; the source-health part marks the pane, and this part re-arms the poll that
failed (after POLL_RESTART_S) and tells the part whose work it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from tui.app.console_health import POLL_RESTART_S, SourceHealthPart
from tui.app.console_protocol import Console, Part
from tui.app.console_workers import WorkerFailed

if TYPE_CHECKING:
    from tui.deck import Deck


class RecoveryPart(Part):
    """Polls that restart by themselves after an unexpected failure, and who hears of one."""

    def __init__(
        self,
        deck: Deck,
        console: Console,
        sources: SourceHealthPart,
        *,
        restarts: Mapping[str, Callable[[], object]],
        told: Mapping[str, Callable[[str], object]],
    ) -> None:
        super().__init__(deck, console)
        self._sources = sources
        self._restarts = restarts  # pane -> its poll, restarted after a failure
        self._told = told  # pane -> the part's own follow-up, given the reason

    def worker_failed(self, message: WorkerFailed) -> None:
        self._sources.worker_failed(message)
        restart = self._restarts.get(message.pane)
        if restart is not None:
            self.console.poll_later(POLL_RESTART_S, restart, f"{message.pane}-restart")
        follow_up = self._told.get(message.pane)
        if follow_up is not None:
            follow_up(message.reason)
