"""Confirmation for start/stop/restart and sleep/wake: where, what, the exact command. It only asks."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from tui.screens.dialog import YesNoDialog
from tui.serving.sleep import SleepAction
from tui.serving.unit.service import ServiceAction


class ConfirmActionScreen(YesNoDialog):
    def __init__(self, action: ServiceAction | SleepAction, note: str = "") -> None:
        super().__init__()
        self.action = action
        self.note = note

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        table.add_row("Host", self.action.host_label)
        table.add_row(
            "Unit" if isinstance(self.action, ServiceAction) else "Server", self.action.unit
        )
        table.add_row("Command", self.action.command_line)
        with Vertical(classes="dialog-frame"):
            yield Label(f"{self.action.verb.capitalize()} {self.action.unit}?", id="confirm-title")
            yield Static(table)
            if self.note:
                yield Static(f"[dim]{self.note}[/]")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.action.verb.capitalize(), variant="warning", id="confirm-yes")
                yield Button("Cancel", id="confirm-no")
