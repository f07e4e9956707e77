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


def _tab(number: int, tab_id: str, label: str, help_text: str) -> ConsoleCommand:
    return ConsoleCommand(
        f"tab-{tab_id}", str(number), f"show_tab('{tab_id}')", label, help_text, "Panes", False
    )


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
        show_in_footer=False,
    ),
    ConsoleCommand("quit", "q", "quit", "Quit", "Leave servedeck (the service keeps running)"),
    ConsoleCommand(
        "refresh",
        "r",
        "refresh",
        "Refresh",
        "Re-read the host overview and processes now",
        show_in_footer=False,
    ),
    ConsoleCommand(
        "summary",
        "s",
        "summary",
        "Summary",
        "Preview the Markdown state summary (e exports it to the data dir)",
    ),
    ConsoleCommand(
        "summary-export",
        "E",
        "export_summary",
        "Export",
        "Export the Markdown state summary to the data dir now (no preview)",
        show_in_footer=False,
        key_display="E",
    ),
    _tab(1, "deck", "Deck", "GPUs, load progress and the service log"),
    _tab(2, "overview", "Overview", "The host: OS, kernel, CPU, RAM, GPUs"),
    _tab(3, "procs", "Processes", "GPU processes: service, leftover, defunct, foreign"),
    _tab(4, "bench", "Bench", "Benchmark results and the comparison of runs"),
    _tab(5, "plan", "Plan", "Deployment preflight: which TP/EP layouts fit"),
    ConsoleCommand(
        "service-start",
        "S",
        "service('start')",
        "Start",
        "Start the service (asks first)",
        "Service",
        key_display="S",
    ),
    ConsoleCommand(
        "service-stop",
        "X",
        "service('stop')",
        "Stop",
        "Stop the service (asks first)",
        "Service",
        key_display="X",
    ),
    ConsoleCommand(
        "service-restart",
        "R",
        "service('restart')",
        "Restart",
        "Restart the service (asks first)",
        "Service",
        False,
        "R",
    ),
    ConsoleCommand(
        "kill-leftovers",
        "K",
        "kill_leftovers",
        "Clean up",
        "End the service's leftover GPU processes (asks first)",
        "Processes",
        key_display="K",
    ),
    ConsoleCommand(
        "kill-selected",
        "k",
        "kill_selected",
        "Kill",
        "End the selected GPU process (asks first)",
        "Processes",
        False,
    ),
    ConsoleCommand(
        "bench", "b", "bench", "Bench", "Run the profile's default benchmark preset", "Bench"
    ),
    ConsoleCommand(
        "bench-pick",
        "B",
        "bench_pick",
        "Presets",
        "Pick a benchmark preset to run",
        "Bench",
        False,
        "B",
    ),
    ConsoleCommand(
        "bench-cancel",
        "ctrl+c",
        "bench_cancel",
        "Cancel bench",
        "Cancel the running benchmark (partial results kept)",
        "Bench",
        False,
    ),
    ConsoleCommand(
        "bench-capacity",
        "C",
        "bench_capacity",
        "Capacity",
        "Find how many users at once meet the SLO ([benchmark.slo])",
        "Bench",
        False,
        "C",
    ),
    ConsoleCommand(
        "plan", "P", "show_tab('plan')", "Plan", "Show the deployment preflight", "Plan", False, "P"
    ),
)


def command_by_id(binding_id: str) -> ConsoleCommand | None:
    return next((command for command in COMMANDS if command.binding_id == binding_id), None)
