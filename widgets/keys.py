"""Bindings built from the one command table (tui.core.keymap), so `?` and the keys agree."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from tui.core.keymap import commands_in


def bindings_for(scope: str) -> list[BindingType]:
    """The Bindings of one area, each with its id (remappable) and its help as tooltip."""
    return [
        Binding(
            command.key,
            command.action,
            command.label,
            show=command.show_in_footer,
            key_display=command.key_display,
            tooltip=command.help,
            id=command.binding_id,
        )
        for command in commands_in(scope)
    ]
