"""The console's evidence on demand: D dumps the engine's stacks per rank, and a stall's offer.

The dump runs in a worker over the Deck's Host (SSH on a remote host), is saved under the
data dir and attached to the stall incident (Timeline event, audit record the handoff's
Incidents list). While the engine is stalled the toast and the service line offer D and
R; R goes through the restart guard and its confirm dialog, never by itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.app.console_protocol import Console, Part
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.core.keymap import effective_keys, shown_keys
from tui.ops.engine_stacks import engine_stacks

if TYPE_CHECKING:
    from tui.app.console_record import RecordPart
    from tui.deck import Deck
    from tui.serving.progress.incident import StallIncidents

STACKS_ID = "engine.stacks"
RESTART_ID = "service.restart"


class StacksPart(Part):
    """D: the engine's stacks, saved and attached to the stall incident."""

    def __init__(
        self, deck: Deck, console: Console, record: RecordPart, incidents: StallIncidents
    ) -> None:
        super().__init__(deck, console)
        self._record = record
        self._incidents = incidents

    def _key(self, binding_id: str) -> str:
        return shown_keys(effective_keys(self.profile.keys)[binding_id], quote="")

    def offer(self) -> str:
        """ "D stacks · R restart (guarded)": what the stall toast and the service line offer."""
        restart = "" if self.profile.read_only else f" · {self._key(RESTART_ID)} restart"
        return f"{self._key(STACKS_ID)} stacks{restart}"

    def stall_toast(self, headline: str) -> str:
        restart = (
            ""
            if self.profile.read_only
            else f"; {self._key(RESTART_ID)} restarts it (the guard checks first, you confirm)"
        )
        return f"{headline}. Press {self._key(STACKS_ID)} for each rank's stacks{restart}."

    @console_worker(
        "engine-stacks", pane="stacks", what="dump the engine's stacks", user_action=True
    )
    async def dump(self) -> None:
        """Dump, save, attach; the toast says where each rank is and names the file."""
        state = self.console.unit_state
        main_pid = state.main_pid if state is not None else None
        self.console.notify("Reading the engine's stacks (py-spy, read-only)...", timeout=5)
        try:
            dump, path = await engine_stacks(self.deck, main_pid)
        except ServedeckError as error:
            self.console.notify(str(error), title="Engine stacks", severity="warning")
            return
        recording = self._record.recording
        self._incidents.attach_stacks(
            dump.at_s, dump.summary(), path, recording.feed if recording else None
        )
        note = f"\n{dump.note}" if dump.note else ""
        self.console.notify(
            f"{dump.summary()}\nsaved to {path}{note}",
            title="Engine stacks",
            severity="warning" if dump.note else "information",
            timeout=30,
        )
