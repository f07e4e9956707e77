"""One command table drives every key binding, the help screen, the footer and the palette.

Plain data (no Textual here): each App, Screen and Widget turns the entries of its scope
into Bindings with their ids (widgets/keys.py), so a profile's or a fleet group's [keys]
table remaps any key by id, `?` lists the keys of the screen on show from this one table,
and README's key table is written from it (`python -m tui.core.keymap --markdown`).
Ids read `area.verb`; the ids of earlier releases still remap (LEGACY_IDS).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleCommand:
    binding_id: str
    key: str
    action: str
    label: str
    help: str
    group: str = "General"
    show_in_footer: bool = True
    key_display: str | None = None
    # Where the key works: "app" anywhere in the console; otherwise the area that binds it.
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
    "alerts": "Alerts firing now",
    "guard": "Start or restart refused",
    "tune": "Tune view",
    "dialog": "Any dialog",
    "help": "This help",
    "fleet": "Fleet",
}
# The areas each app can show, so `?` lists no key of another app.
FLEET_SCOPES = ("fleet", "dialog", "help")
REPLAY_SCOPES = ("replay", "help")
CONSOLE_SCOPES = tuple(scope for scope in SCOPES if scope != "fleet")


def _app(
    binding_id: str,
    key: str,
    action: str,
    label: str,
    help_text: str,
    group: str = "General",
    show: bool = True,
    key_display: str | None = None,
) -> ConsoleCommand:
    """A key the console binds everywhere."""
    return ConsoleCommand(
        binding_id=binding_id,
        key=key,
        action=action,
        label=label,
        help=help_text,
        group=group,
        show_in_footer=show,
        key_display=key_display,
    )


def _tab(number: int, tab_id: str, label: str, help_text: str) -> ConsoleCommand:
    # "Show Bench", not "Bench": the palette must not list two commands of one name.
    return _app(
        f"tab.{tab_id}",
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
    """A key bound by one area (a widget, a screen or another app), not by the console."""
    return ConsoleCommand(
        binding_id=binding_id,
        key=key,
        action=action,
        label=label,
        help=help_text,
        group=SCOPES[scope],
        show_in_footer=show,
        key_display=key_display,
        scope=scope,
    )


COMMANDS: tuple[ConsoleCommand, ...] = (
    _app("app.help", "question_mark", "help", "Help", "Show the keys that work here, then every other key", key_display="?"),
    # Textual adds its own ctrl+p only when no binding runs the palette: name both.
    _app("app.palette", "colon,ctrl+p", "command_palette", "Commands", "Command palette (: or ctrl+p): every command and preset by name", show=False, key_display=":"),
    _app("app.quit", "q", "quit", "Quit", "Leave servedeck (the service keeps running)"),
    _app("app.refresh", "r", "refresh", "Refresh", "Re-read the host overview and processes now", show=False),
    _app("summary.preview", "s", "summary", "Summary", "Preview the Markdown state summary (e exports it to the data dir)"),
    _app("summary.export", "E", "export_summary", "Export", "Export the Markdown state summary to the data dir now (no preview)", show=False, key_display="E"),
    _tab(1, "deck", "Deck", "The Deck: GPUs, load progress and the service log"),
    _tab(2, "overview", "Overview", "The Overview: the host's OS, kernel, CPU, RAM, GPUs"),
    _tab(3, "procs", "Processes", "The Processes pane: GPU processes (service, leftover, suspect, defunct, foreign)"),
    _tab(4, "bench", "Bench", "The Bench pane: benchmark results and the comparison of runs"),
    _tab(5, "plan", "Plan", "The Plan pane: deployment preflight, which TP/EP layouts fit"),
    _tab(7, "health", "Health", "The Health pane: interconnect doctor and GPU health (XID, ECC, remaps)"),
    _app("tab.timeline", "6", "timeline", "Timeline", "The Timeline: what happened, the recorded events, filterable; g replays the Deck at one", "Panes", False),
    _app("timeline.open", "T", "timeline", "Timeline (T)", "Open the Timeline from anywhere", "Panes", False, "T"),
    _app("alerts.open", "A", "alerts", "Alerts", "The alerts firing now: rule, severity, since when, value; acked and muted marked", "Panes", False, "A"),
    _app("service.start", "S", "service('start')", "Start", "Start the service (asks first; refused while leftovers hold GPU memory or the port: K first)", "Service", key_display="S"),
    _app("service.stop", "X", "service('stop')", "Stop", "Stop the service (asks first)", "Service", key_display="X"),
    _app("service.restart", "R", "service('restart')", "Restart", "Restart the service (asks first; refused like S while leftovers hold the GPUs)", "Service", False, "R"),
    _app("engine.stacks", "D", "stacks", "Stacks", "Dump the engine's Python and kernel stacks per rank (py-spy, read-only) to the data dir; offered while stalled", "Service", False, "D"),
    _app("service.sleep", "Z", "sleep_mode('sleep')", "Sleep", "Put the engine to sleep, level 1 (vLLM sleep mode: offered when the server answers /is_sleeping; asks first)", "Service", False, "Z"),
    _app("service.wake", "W", "sleep_mode('wake')", "Wake", "Wake the sleeping engine (asks first; in the footer while it sleeps)", "Service", key_display="W"),
    _app("procs.cleanup", "K", "kill_leftovers", "Clean up", "End the service's leftover GPU processes (one dialog for all)", "Processes", key_display="K"),
    _app("procs.kill", "k", "kill_selected", "Kill", "End the selected GPU process (asks first; a foreign one only after typing its pid)", "Processes"),
    _app("bench.run", "b", "bench", "Bench", "Run the profile's default benchmark preset", "Bench"),
    _app("bench.pick", "B", "bench_pick", "Presets", "Pick a benchmark preset to run", "Bench", False, "B"),
    _app("bench.cancel", "c", "bench_cancel", "Cancel bench", "Cancel the running benchmark (partial results kept; in the footer while one runs)", "Bench"),
    _app("health.probe", "p", "probe", "Probe", "Measure P2P and all-reduce bandwidth on idle GPUs (asks first)", "Health", False, "p"),
    _app("bench.capacity", "C", "bench_capacity", "Capacity", "Find how many users at once meet the SLO ([benchmark.slo])", "Bench", False, "C"),
    _app("plan.show", "P", "show_tab('plan')", "Plan", "Show the deployment preflight", "Plan", False, "P"),
    _app("tune.open", "U", "tune", "Tune", "Tune the service: a tune.toml's configurations through the Plan, each started, measured and ranked (asks first; cancel restores the unit)", "Service", False, "U"),
    _area("log", "log.search", "slash", "open_search", "Search", "Search the log (a regex)", True, "/"),
    _area("log", "log.next", "n", "next_match", "Next match", "Jump to the next match", False),
    _area("log", "log.previous", "N", "previous_match", "Previous", "Jump to the previous match", False),
    _area("log", "log.follow", "end", "follow", "Follow", "Follow the newest line again (scrolling up pauses it)"),
    _area("log", "log.filter", "f", "cycle_filter", "Filter", "Level filter: all, warnings, errors"),
    _area("log", "log.wrap", "w", "toggle_wrap", "Wrap", "Wrap long lines (follow mode is kept)", False),
    _area("log", "log.times", "t", "toggle_timestamps", "Times", "Show each line's time", False),
    _area("gpu", "gpu.topology", "t", "toggle_topology", "Topology", "GPU topology with CPU and NUMA affinity, in place of the table (focus on GPUs)"),
    _area("gpu-table", "gpu.up", "up", "cursor_up", "Up", "Select the GPU above (its processes show below)", False),
    _area("gpu-table", "gpu.down", "down", "cursor_down", "Down", "Select the GPU below", False),
    _area("gpu-table", "gpu.first", "home", "cursor_first", "First", "Select the first GPU", False),
    _area("gpu-table", "gpu.last", "end", "cursor_last", "Last", "Select the last GPU", False),
    # Listed for `?`; the Processes table binds its arrows itself.
    _area("procs", "procs.move", "up,down", "noop", "Select", "Select a process (then k)", False, "↑ ↓"),
    _area("procs", "procs.sort", "o", "cycle_sort", "Sort", "Sort the processes by memory, pid, class, user or SM % (o cycles)"),
    _area("procs", "procs.filter", "slash", "open_filter", "Filter", "Filter the processes: type text of the command, user, class or pid", True, "/"),
    _area("procs", "procs.clear", "escape", "clear_filter", "Clear", "Clear the filter (all processes again)", False, "Esc"),
    _area("summary", "preview.help", "question_mark", "app.help", "Help", "The preview's keys, then the others", True, "?"),
    _area("summary", "preview.close", "escape,q", "dismiss", "Close", "Close the preview", True, "esc q"),
    _area("summary", "preview.export", "e", "export", "Export", "Write the summary to the data dir"),
    _area("summary", "preview.refresh", "r", "recollect", "Refresh", "Collect the summary again"),
    _area("timeline", "timeline.close", "escape", "close", "Close", "Close the search, then the Timeline"),
    _area("timeline", "timeline.search", "slash", "search", "Search", "Search the events' text", True, "/"),
    _area("timeline", "timeline.kind", "f", "cycle_kind", "Kind", "Show one kind of event, then the next"),
    _area("timeline", "timeline.gpu", "n", "cycle_gpu", "GPU", "Show one GPU's events, then the next"),
    _area("timeline", "timeline.replay", "g", "replay", "Replay here", "Replay the Deck at the selected event (as recorded; no action key works there)"),
    _area("timeline", "timeline.mute", "m", "mute", "Mute alert 1 h", "Mute the selected alert for an hour (still recorded)"),
    _area("timeline", "timeline.ack", "a", "ack", "Ack alert", "Acknowledge the selected alert"),
    _area("timeline", "timeline.reload", "r", "reload", "Reload", "Read the recording again (newest events)"),
    _area("timeline", "timeline.newest", "end", "newest", "Newest", "Select the newest event", False),
    _area("timeline", "timeline.oldest", "home", "oldest", "Oldest", "Select the oldest event", False),
    _area("replay", "replay.close", "escape,q", "close", "Leave replay", "Back to the Timeline", True, "esc q"),
    _area("replay", "replay.back", "left_square_bracket", "step(-1)", "-1 s", "One second back", True, "["),
    _area("replay", "replay.forward", "right_square_bracket", "step(1)", "+1 s", "One second on", True, "]"),
    _area("replay", "replay.previous", "left_curly_bracket", "jump(False)", "Prev event", "To the previous event", True, "{"),
    _area("replay", "replay.next", "right_curly_bracket", "jump(True)", "Next event", "To the next event", True, "}"),
    _area("replay", "replay.help", "question_mark", "app.help", "Help", "The replay's keys", False, "?"),
    _area("alerts", "alerts.close", "escape,q,A", "dismiss", "Close", "Close the list of alerts firing now"),
    _area("alerts", "alerts.reload", "r", "reload", "Re-read", "Read the alerts firing now again"),
    _area("guard", "guard.kill", "K", "kill_first", "End leftovers", "End the leftovers holding the GPUs first (their own dialog asks); nothing starts"),
    _area("tune", "tune.cancel", "escape,c", "cancel_tune", "Cancel", "Cancel the running tune (asks; the unit is restored as it was); a finished one closes", True, "esc c"),
    _area("tune", "tune.hide", "q", "hide", "Hide", "Hide the Tune view; the tune runs on (U shows it again)"),
    _area("dialog", "dialog.cancel", "escape", "cancel", "Cancel", "Close the dialog without acting (the safe answer)"),
    _area("help", "help.close", "escape,q,question_mark", "dismiss", "Close", "Close this help"),
    _area("fleet", "fleet.open", "enter", "open_host", "Open", "Open the selected host's full console (same SSH connection; q there comes back)"),
    _area("fleet", "fleet.filter", "slash", "filter", "Filter", "Filter by name, label or state", True, "/"),
    _area("fleet", "fleet.sort", "s", "sort_next", "Sort", "Sort by the next column (or click a header)"),
    _area("fleet", "fleet.reverse", "r", "reverse", "Reverse", "Reverse the sort order"),
    _area("fleet", "fleet.restart", "R", "fleet_service('restart')", "Restart", "Restart the selected host's unit (asks first, re-checks the machine, audited)"),
    _area("fleet", "fleet.stop", "X", "fleet_service('stop')", "Stop", "Stop the selected host's unit (asks first, re-checks the machine, audited)"),
    _area("fleet", "fleet.cleanup", "K", "fleet_cleanup", "Clean up", "End leftover GPU processes of the selected host, or of each marked host (asks first)"),
    _area("fleet", "fleet.bench", "b", "fleet_bench", "Bench", "Run the host's quick benchmark through its SSH forward (asks first)"),
    _area("fleet", "fleet.mark", "space", "toggle_mark", "Mark", "Mark or unmark the selected host for K", False),
    _area("fleet", "fleet.export", "E", "export_summary", "Export", "Write the fleet's Markdown summary to a new file in this folder"),
    _area("fleet", "fleet.clear", "escape", "clear_filter", "Clear", "Clear the filter", False),
    _area("fleet", "fleet.quit", "q", "quit_fleet", "Quit", "Leave the fleet"),
    _area("fleet", "fleet.help", "question_mark", "help", "Help", "The Fleet's keys, then the dialogs'", False, "?"),
)  # fmt: skip

# Ids of earlier releases, still read from a [keys] table: a remap the operator wrote keeps working.
LEGACY_IDS: dict[str, str] = {
    "help": "app.help",
    "palette": "app.palette",
    "quit": "app.quit",
    "refresh": "app.refresh",
    "summary": "summary.preview",
    "summary-export": "summary.export",
    "timeline": "tab.timeline",
    "timeline-anywhere": "timeline.open",
    "alerts": "alerts.open",
    "service-start": "service.start",
    "service-stop": "service.stop",
    "service-restart": "service.restart",
    "kill-leftovers": "procs.cleanup",
    "kill-selected": "procs.kill",
    "bench": "bench.run",
    "bench-pick": "bench.pick",
    "bench-cancel": "bench.cancel",
    "bench-capacity": "bench.capacity",
    "health-probe": "health.probe",
    "plan": "plan.show",
    "confirm-cancel": "dialog.cancel",
    "kill-cancel": "dialog.cancel",
    "preset-cancel": "dialog.cancel",
    "guard-cancel": "dialog.cancel",
    "guard-kill": "guard.kill",
    "help-close": "help.close",
    "alerts-firing-close": "alerts.close",
    "alerts-firing-reload": "alerts.reload",
    "replay-prev": "replay.previous",
    **{
        f"tab-{tab}": f"tab.{tab}"
        for tab in ("deck", "overview", "procs", "bench", "plan", "health")
    },
    **{
        f"timeline-{verb}": f"timeline.{verb}"
        for verb in ("close", "search", "kind", "gpu", "replay", "mute", "ack", "reload")
    },
    **{"timeline-newest": "timeline.newest", "timeline-oldest": "timeline.oldest"},
    **{f"replay-{verb}": f"replay.{verb}" for verb in ("close", "back", "forward", "next")},
}
BY_ID: dict[str, ConsoleCommand] = {command.binding_id: command for command in COMMANDS}
# Textual's names of the characters README and `?` write as themselves.
SHOWN_KEYS = {
    "question_mark": "?",
    "slash": "/",
    "colon": ":",
    "space": "space",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "left_curly_bracket": "{",
    "right_curly_bracket": "}",
}
README_START = "<!-- keys:start (python -m tui.core.keymap --markdown) -->"
README_END = "<!-- keys:end -->"


def commands_in(scope: str) -> tuple[ConsoleCommand, ...]:
    """The commands one area binds (the console binds scope "app")."""
    return tuple(command for command in COMMANDS if command.scope == scope)


def current_id(binding_id: str) -> str:
    """The id a [keys] entry names today (an id of an earlier release read as its successor)."""
    return LEGACY_IDS.get(binding_id, binding_id)


def own_keys(binding_id: str) -> frozenset[str]:
    """The keys a binding has by default (a reserved key stays usable by its own binding)."""
    command = BY_ID.get(binding_id)
    return frozenset() if command is None else frozenset(command.key.split(","))


def effective_keys(remaps: Mapping[str, str]) -> dict[str, str]:
    """Each binding's keys as `?` shows them: the remap if any, else its display or default."""
    return {
        command.binding_id: remaps.get(command.binding_id, command.key_display or command.key)
        for command in COMMANDS
    }


def shown_keys(keys: str, quote: str = "`") -> str:
    """A key list as people read it: "`escape`, `q` or `?`" for escape,q,question_mark."""
    names = [f"{quote}{SHOWN_KEYS.get(key.strip(), key.strip())}{quote}" for key in keys.split(",")]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_rows() -> list[str]:
    """README's key table: one row per binding, by area in `?`'s order, with its id."""
    rows = ["| key | where | what it does | id (for `[keys]`) |", "|---|---|---|---|"]
    for scope in SCOPES:
        for command in commands_in(scope):
            where = "anywhere" if scope == "app" else SCOPES[scope]
            rows.append(
                f"| {shown_keys(command.key)} | {where} | {_cell(command.help)} "
                f"| `{command.binding_id}` |"
            )
    return rows


def markdown_block() -> str:
    """The table between README's markers, markers included."""
    return "\n".join([README_START, *markdown_rows(), README_END])


def with_block(readme: str) -> str:
    """README's text with the block between the markers written again from the table."""
    start, end = readme.find(README_START), readme.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"README has no {README_START!r} ... {README_END!r} block")
    return readme[:start] + markdown_block() + readme[end + len(README_END) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tui.core.keymap", description="README's key table, from the key table"
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--markdown", action="store_true", help="print the table with its markers")
    what.add_argument("--write", metavar="README", help="rewrite the block in this file")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown_block() + "\n")
        return 0
    path = Path(args.write)
    try:
        path.write_text(with_block(path.read_text(encoding="utf-8")), encoding="utf-8")
    except (OSError, ValueError) as error:
        sys.stderr.write(f"keymap: {path}: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
