"""The `?` screen: every key, taken from the live bindings so remapped keys show truly."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.keymap import ConsoleCommand


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", id="help-close"),
    ]

    def __init__(
        self, commands: tuple[ConsoleCommand, ...], keys_by_id: dict[str, str], extra: str = ""
    ) -> None:
        super().__init__()
        self._commands = commands
        self._keys_by_id = keys_by_id
        self._extra = extra

    def compose(self) -> ComposeResult:
        table = Table(title="servedeck keys", expand=True, show_edge=False)
        table.add_column("Key", style="bold cyan", no_wrap=True)
        table.add_column("Pane", style="dim", no_wrap=True)
        table.add_column("What it does")
        for command in self._commands:
            key = self._keys_by_id.get(command.binding_id, command.key_display or command.key)
            table.add_row(key, command.group, command.help)
        table.add_row("ctrl+p", "General", "Command palette: every command by name")
        with VerticalScroll():
            yield Static(table)
            if self._extra:
                yield Static(self._extra)
            yield Static("[dim]escape, q or ? closes this screen[/]")

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
