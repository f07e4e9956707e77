"""Confirmation for start/stop/restart: where, which unit, the exact command. It only asks."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from tui.screens.dialog import Dialog
from tui.serving.service import ServiceAction


class ConfirmActionScreen(Dialog[bool]):
    TONE = "-warning"
    # The safe button has the focus from the first frame (not after on_mount: keys typed
    # quickly after the dialog opens must not land on the destructive one).
    AUTO_FOCUS = "#confirm-no"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="confirm-cancel")]

    def __init__(self, action: ServiceAction, note: str = "") -> None:
        super().__init__()
        self.action = action
        self.note = note

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        table.add_row("Host", self.action.host_label)
        table.add_row("Unit", self.action.unit)
        table.add_row("Command", self.action.command_line)
        with Vertical(classes="dialog-frame"):
            yield Label(f"{self.action.verb.capitalize()} {self.action.unit}?", id="confirm-title")
            yield Static(table)
            if self.note:
                yield Static(f"[dim]{self.note}[/]")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.action.verb.capitalize(), variant="warning", id="confirm-yes")
                yield Button("Cancel", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def cancel_result(self) -> bool:
        return False
