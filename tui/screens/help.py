"""The `?` screen: every key from the one command table, those that work here first.

Keys show as the live keymap has them, so remapped keys show truly.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.core.keymap import SCOPES, ConsoleCommand
from tui.screens.dialog import Dialog


def keys_table(
    title: str,
    commands: tuple[ConsoleCommand, ...],
    keys_by_id: dict[str, str],
    scopes: tuple[str, ...],
    shadowed: frozenset[str] = frozenset(),
) -> Table:
    """One table of the keys of `scopes`, grouped by area in the table's order.

    An app key in `shadowed` is left out: the area on screen binds that key to its own
    action. Every cell is plain text: a help line's `[benchmark.slo]` is not markup.
    """
    table = Table(title=title, expand=True, show_edge=False, title_justify="left")
    table.add_column("Key", style="bold cyan", no_wrap=True)
    table.add_column("Where", style="dim", no_wrap=True)
    table.add_column("What it does")
    for scope in scopes:
        for command in commands:
            if command.scope != scope:
                continue
            key = keys_by_id.get(command.binding_id, command.key_display or command.key)
            if scope == "app" and key in shadowed:
                continue
            where = command.group if scope == "app" else SCOPES[scope]
            table.add_row(Text(key), Text(where), Text(command.help))
    return table


class HelpScreen(Dialog[None]):
    DEFAULT_CSS = """
    HelpScreen > .dialog-frame { width: 90%; max-width: 100; height: 90%; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", id="help-close"),
    ]

    def __init__(
        self,
        commands: tuple[ConsoleCommand, ...],
        keys_by_id: dict[str, str],
        extra: str = "",
        here: tuple[str, ...] = ("app",),
    ) -> None:
        super().__init__()
        self._commands = commands
        self._keys_by_id = keys_by_id
        self._extra = extra
        self._here = here

    def compose(self) -> ComposeResult:
        elsewhere = tuple(scope for scope in SCOPES if scope not in self._here)
        shadowed = frozenset(
            self._keys_by_id.get(command.binding_id, command.key_display or command.key)
            for command in self._commands
            if command.scope in self._here and command.scope != "app"
        )
        with VerticalScroll(classes="dialog-frame"):
            yield Static(
                keys_table("Keys that work here", self._commands, self._keys_by_id, self._here),
                id="help-here",
            )
            if elsewhere:
                yield Static(
                    keys_table(
                        "Keys of other areas",
                        self._commands,
                        self._keys_by_id,
                        elsewhere,
                        shadowed,
                    ),
                    id="help-elsewhere",
                )
            if self._extra:
                yield Static(self._extra)
            yield Static("[dim]escape, q or ? closes this screen[/]")

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
