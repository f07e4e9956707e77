"""The console's keys beyond the bindings: `?` help, the palette's commands, read-only refusals.

A part of ServedeckApp. Every key comes from the one table (tui/core/keymap.py); this
part lists the keys of the screen on `?`, offers the app's commands and the benchmark
presets in the palette (only what `check_action` offers now), and says no, audited, to a
key that would change the host when the console is read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from textual.actions import parse as parse_action
from textual.app import SystemCommand

from tui.app.console_protocol import Console, Part
from tui.core.audit import append_audit
from tui.core.formatting import counted
from tui.core.keymap import COMMANDS, commands_in, effective_keys
from tui.offered import help_scopes, refused_read_only
from tui.screens.help import HelpScreen
from widgets.bench_view import FORMULAS

if TYPE_CHECKING:
    from tui.deck import Deck


class KeysPart(Part):
    """Help, the palette's commands and the read-only refusal of a key."""

    def __init__(
        self,
        deck: Deck,
        console: Console,
        *,
        offered: Callable[[str, tuple[object, ...]], bool | None],
        run_action: Callable[[str], object],
        bench: Callable[[str], None],
    ) -> None:
        super().__init__(deck, console)
        self._offered = offered  # the app's check_action
        self._run_action = run_action
        self._bench = bench  # run a preset by name

    def help(self) -> None:
        screen_scope = getattr(self.console.screen, "KEY_SCOPE", None)
        scopes = help_scopes(self.console.active_tab() or "", screen_scope)
        keys = effective_keys(self.profile.keys)
        self.console.push_screen(HelpScreen(COMMANDS, keys, extra=FORMULAS, here=scopes))

    def pressed(self, key: str) -> None:
        """A key that would change the host or load its server, pressed read-only: say no, audit it.

        Read-only hides those keys, so Textual ignores the press; a browser visitor who
        presses X or b anyway sees why nothing happened, and the audit log keeps the attempt.
        """
        if not self.profile.read_only:
            return
        keymap = dict(self.profile.keys)
        for command in commands_in("app"):
            keys = keymap.get(command.binding_id, command.key).split(",")
            if key not in (each.strip() for each in keys):
                continue
            _namespace, name, _parameters = parse_action(command.action)
            if refused_read_only(name):
                self.refuse_read_only(key, command.label, command.action)
            return

    def refuse_read_only(self, key: str, label: str, action: str) -> None:
        self.console.notify(
            f"Read-only console: {label} ({key}) is refused.",
            title="Read-only",
            severity="warning",
        )
        append_audit(
            "console.refused",
            self.deck.host_label,
            {"pressed": key, "action": action, "reason": "read-only mode"},
        )

    def palette(self, builtin: list[SystemCommand]) -> Iterator[SystemCommand]:
        """Textual's own commands, then the app's keys offered now, then the presets."""
        yield from builtin
        taken = {command.title for command in builtin}  # Textual's own Quit: not a second one
        for command in commands_in("app"):
            if command.action == "command_palette" or command.label in taken:
                continue
            _namespace, name, parameters = parse_action(command.action)
            if self._offered(name, parameters) is False:
                continue
            yield SystemCommand(
                command.label,
                command.help,
                lambda action=command.action: self._run_action(action),
            )
        if self.profile.read_only:  # a benchmark loads the server: no preset to run either
            return
        for name, preset in self.profile.benchmark.presets.items():
            yield SystemCommand(
                f"Bench preset {name}",
                f"Run the {name!r} benchmark preset ({counted(preset.output_tokens, 'output token')})",
                lambda name=name: self._bench(name),
            )
