"""S/R behind the restart guard: leftovers in the way open this dialog, not the confirm.

The dialog names each leftover's PID, GiB and reason and offers K (end them) first;
it never starts anything itself. The console's restart watch
(tui/app/console_restart_watch.py) runs the guard's listing in a worker and opens it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from tui.screens.dialog import Dialog
from widgets.keys import bindings_for

if TYPE_CHECKING:  # the guard (and the doctor's checks) load with the first start/restart
    from tui.serving.unit.restart_guard import GuardVerdict


class GuardRefusedScreen(Dialog[bool]):
    """Dismissed True when the operator chose K (end the leftovers first)."""

    DEFAULT_CSS = """
    GuardRefusedScreen > .dialog-frame { width: 90%; max-width: 140; }
    """
    TONE = "-danger"
    AUTO_FOCUS = "#guard-cancel"
    BINDINGS = bindings_for("guard")  # and the dialog's escape (cancel)

    def __init__(self, verdict: GuardVerdict) -> None:
        super().__init__()
        self.verdict = verdict

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-frame"):
            yield Label(
                f"{self.verdict.verb.capitalize()} refused: {self.verdict.why()}",
                id="guard-title",
            )
            yield Static("\n".join(self.verdict.process_lines()), id="guard-procs", markup=False)
            yield Static(
                "[dim]A new engine would fail its KV-cache check, OOM or find "
                "its port taken. End the leftovers first.[/]"
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("K: end leftovers", variant="error", id="guard-kill")
                yield Button("Cancel", id="guard-cancel")

    def cancel_result(self) -> bool:
        return False

    def action_kill_first(self) -> None:
        self.dismiss(True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "guard-kill")
