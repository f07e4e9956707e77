"""One command table drives the key bindings, the help screen and the command palette.

Plain data (no Textual here): the app turns each entry into a Binding with an id,
so users remap keys from a profile's [keys] table by binding id.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConsoleCommand:
    binding_id: str
    key: str
    action: str
    label: str
    help: str
    group: str = "General"
    show_in_footer: bool = True
    key_display: str | None = None


COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        "help", "question_mark", "help", "Help", "Show every key and what it does", key_display="?"
    ),
    ConsoleCommand(
        "palette",
        "colon",
        "command_palette",
        "Commands",
        "Open the command palette (also ctrl+p)",
        key_display=":",
    ),
    ConsoleCommand("quit", "q", "quit", "Quit", "Leave servedeck (the service keeps running)"),
    ConsoleCommand("refresh", "r", "refresh", "Refresh", "Re-read the host overview now"),
    ConsoleCommand(
        "summary",
        "s",
        "summary",
        "Summary",
        "Preview the Markdown state summary (e exports it to the data dir)",
    ),
    ConsoleCommand(
        "tab-overview",
        "1",
        "show_tab('overview')",
        "Overview",
        "Show the host overview",
        group="Panes",
        show_in_footer=False,
    ),
)


def command_by_id(binding_id: str) -> ConsoleCommand | None:
    return next((command for command in COMMANDS if command.binding_id == binding_id), None)
