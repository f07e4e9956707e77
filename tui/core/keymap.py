"""One command table drives the key bindings, the help screen, the footer and the palette.

Plain data (no Textual here): the app and the widgets turn each entry of their scope
into a Binding with an id, so users remap keys from a profile's [keys] table by
binding id, and `?` lists every key from this one table.
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
    # Where the key works: "app" everywhere; otherwise the area that binds it (SCOPES).
    scope: str = "app"


# Areas with keys of their own, in the order `?` lists them, with the name it shows.
SCOPES: dict[str, str] = {
    "app": "Everywhere",
    "log": "Deck: service log",
    "gpu": "Deck: GPU pane",
    "gpu-table": "Deck: GPU table",
    "procs": "Processes table",
    "summary": "Summary preview",
    "timeline": "Timeline",
    "replay": "Replay",
}


def _tab(number: int, tab_id: str, label: str, help_text: str) -> ConsoleCommand:
    # "Show Bench", not "Bench": the palette must not list two commands of one name.
    return ConsoleCommand(
        f"tab-{tab_id}",
        str(number),
        f"show_tab('{tab_id}')",
        f"Show {label}",
        help_text,
        "Panes",
        False,
    )


def _area(
    scope: str,
    binding_id: str,
    key: str,
    action: str,
    label: str,
    help_text: str,
    show: bool = True,
    key_display: str | None = None,
) -> ConsoleCommand:
    """A key bound by one area (a widget or a screen), not by the app."""
    return ConsoleCommand(
        binding_id, key, action, label, help_text, SCOPES[scope], show, key_display, scope
    )


COMMANDS: tuple[ConsoleCommand, ...] = (
    ConsoleCommand(
        "help", "question_mark", "help", "Help", "Show every key and what it does", key_display="?"
    ),
    ConsoleCommand(
        "palette",
        # Textual adds its own ctrl+p only when no binding runs the palette: name both.
        "colon,ctrl+p",
        "command_palette",
        "Commands",
        "Command palette (: or ctrl+p): every command and preset by name",
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
    _tab(3, "procs", "Processes", "GPU processes: service, leftover, suspect, defunct, foreign"),
    _tab(4, "bench", "Bench", "Benchmark results and the comparison of runs"),
    _tab(5, "plan", "Plan", "Deployment preflight: which TP/EP layouts fit"),
    _tab(7, "health", "Health", "Interconnect doctor and GPU health (XID, ECC, remaps)"),
    ConsoleCommand(
        "timeline",
        "6",
        "timeline",
        "Timeline",
        "What happened: the recorded events, filterable; g replays the Deck at one",
        "Panes",
        False,
    ),
    ConsoleCommand(
        "timeline-anywhere",
        "T",
        "timeline",
        "Timeline (T)",
        "Open the Timeline from anywhere",
        "Panes",
        False,
        "T",
    ),
    ConsoleCommand(
        "alerts",
        "A",
        "alerts",
        "Alerts",
        "The alerts firing now: rule, severity, since when, value; acked and muted marked",
        "Panes",
        False,
        "A",
    ),
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
        "End the selected GPU process (asks first; offered on the Processes pane)",
        "Processes",
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
        "c",
        "bench_cancel",
        "Cancel bench",
        "Cancel the running benchmark (partial results kept; in the footer while one runs)",
        "Bench",
    ),
    ConsoleCommand(
        "health-probe",
        "p",
        "probe",
        "Probe",
        "Measure P2P and all-reduce bandwidth on idle GPUs (asks first)",
        "Health",
        False,
        "p",
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
    _area(
        "log", "log.search", "slash", "open_search", "Search", "Search the log (a regex)", True, "/"
    ),
    _area("log", "log.next", "n", "next_match", "Next match", "Jump to the next match", False),
    _area(
        "log",
        "log.previous",
        "N",
        "previous_match",
        "Previous",
        "Jump to the previous match",
        False,
    ),
    _area("log", "log.follow", "end", "follow", "Follow", "Follow the newest line again"),
    _area(
        "log", "log.filter", "f", "cycle_filter", "Filter", "Level filter: all, warnings, errors"
    ),
    _area(
        "log",
        "log.wrap",
        "w",
        "toggle_wrap",
        "Wrap",
        "Wrap long lines (follow mode is kept)",
        False,
    ),
    _area("log", "log.times", "t", "toggle_timestamps", "Times", "Show each line's time", False),
    _area(
        "gpu", "gpu.topology", "t", "toggle_topology", "Topology", "GPU topology (focus on GPUs)"
    ),
    _area("gpu-table", "gpu.up", "up", "cursor_up", "Up", "Select the GPU above", False),
    _area("gpu-table", "gpu.down", "down", "cursor_down", "Down", "Select the GPU below", False),
    _area("gpu-table", "gpu.first", "home", "cursor_first", "First", "Select the first GPU", False),
    _area("gpu-table", "gpu.last", "end", "cursor_last", "Last", "Select the last GPU", False),
    # Listed for `?`; the Processes table binds its arrows itself.
    _area(
        "procs",
        "procs.move",
        "up,down",
        "noop",
        "Select",
        "Select a process (then k)",
        False,
        "↑ ↓",
    ),
    _area(
        "procs",
        "procs.sort",
        "o",
        "cycle_sort",
        "Sort",
        "Sort the processes by memory, pid, class or user (o cycles)",
    ),
    _area(
        "procs",
        "procs.filter",
        "slash",
        "open_filter",
        "Filter",
        "Filter the processes: type text of the command, user, class or pid",
        True,
        "/",
    ),
    _area(
        "procs",
        "procs.clear",
        "escape",
        "clear_filter",
        "Clear",
        "Clear the filter (all processes again)",
        False,
        "Esc",
    ),
    _area("summary", "preview.help", "question_mark", "app.help", "Help", "These keys", True, "?"),
    _area(
        "summary",
        "preview.close",
        "escape,q",
        "dismiss",
        "Close",
        "Close the preview",
        True,
        "esc q",
    ),
    _area(
        "summary", "preview.export", "e", "export", "Export", "Write the summary to the data dir"
    ),
    _area("summary", "preview.refresh", "r", "recollect", "Refresh", "Collect the summary again"),
    _area("timeline", "timeline-close", "escape", "close", "Close", "Close the search, then the Timeline"),
    _area("timeline", "timeline-search", "slash", "search", "Search", "Search the events' text", True, "/"),
    _area("timeline", "timeline-kind", "f", "cycle_kind", "Kind", "Show one kind of event, then the next"),
    _area("timeline", "timeline-gpu", "n", "cycle_gpu", "GPU", "Show one GPU's events, then the next"),
    _area("timeline", "timeline-replay", "g", "replay", "Replay here", "Replay the Deck at the selected event"),
    _area("timeline", "timeline-mute", "m", "mute", "Mute alert 1 h", "Mute the selected alert for an hour (still recorded)"),
    _area("timeline", "timeline-ack", "a", "ack", "Ack alert", "Acknowledge the selected alert"),
    _area("timeline", "timeline-reload", "r", "reload", "Reload", "Read the recording again (newest events)"),
    _area("timeline", "timeline-newest", "end", "newest", "Newest", "Select the newest event", False),
    _area("timeline", "timeline-oldest", "home", "oldest", "Oldest", "Select the oldest event", False),
    _area("replay", "replay-close", "escape,q", "close", "Leave replay", "Back to the Timeline", True, "esc q"),
    _area("replay", "replay-back", "left_square_bracket", "step(-1)", "-1 s", "One second back", True, "["),
    _area("replay", "replay-forward", "right_square_bracket", "step(1)", "+1 s", "One second on", True, "]"),
    _area("replay", "replay-prev", "left_curly_bracket", "jump(False)", "Prev event", "To the previous event", True, "{"),
    _area("replay", "replay-next", "right_curly_bracket", "jump(True)", "Next event", "To the next event", True, "}"),
)  # fmt: skip


def commands_in(scope: str) -> tuple[ConsoleCommand, ...]:
    """The commands one area binds (the app binds scope "app")."""
    return tuple(command for command in COMMANDS if command.scope == scope)
