"""The `?` screen: the keys of the app on show from the one command table, those that work here first.

Keys show as the live keymap has them, so remapped keys show truly; an app lists only the
areas it can show (the Fleet none of the console's).
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.core.keymap import CONSOLE_SCOPES, SCOPES, ConsoleCommand, shown_keys
from tui.screens.dialog import Dialog
from widgets.keys import bindings_for


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
    BINDINGS = bindings_for("help")

    def __init__(
        self,
        commands: tuple[ConsoleCommand, ...],
        keys_by_id: dict[str, str],
        extra: str = "",
        here: tuple[str, ...] = ("app",),
        scopes: tuple[str, ...] = CONSOLE_SCOPES,
    ) -> None:
        super().__init__()
        self._commands = commands
        self._keys_by_id = keys_by_id
        self._extra = extra
        self._here = here
        self._scopes = scopes  # every area of this app: the others are listed after `here`

    def compose(self) -> ComposeResult:
        elsewhere = tuple(scope for scope in self._scopes if scope not in self._here)
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
            closing = self._keys_by_id.get("help.close", "escape,q,question_mark")
            yield Static(Text(f"{shown_keys(closing, quote='')} closes this screen", style="dim"))

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
