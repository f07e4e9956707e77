"""The console app: ServedeckApp, its parts (console_*.py), its messages and terminal driver.

Textual lives here, in tui/screens/ and in widgets/ only (pyproject.toml's import-linter
contracts); everything the app shows comes from the UI-free core under tui/.

`tui.app.ServedeckApp` is imported on first use: the screens import the app's helpers
(tui.app.console_workers), and the app imports the screens.

console.py: The servedeck console: wires a Deck's sources to widgets through workers and messages
console_actions.py: The console's keys, each handed to the part that does it in one line
console_bench.py: The console's Bench pane: run a preset in its own process, draw its events, keep the history
console_gpus.py: The console's GPUs: the poll, the history and the GPU pane's redraw
console_guard.py: A guard for the console's message handlers (no Textual needed, but it serves the UI)
console_handoff.py: The console's Plan pane and state summary (preview, one-key export): a part of ServedeckApp
console_hardware.py: The console's Health pane: interconnect doctor and GPU health; XIDs followed live
console_health.py: The console's source health: stale panes with their age, the header's reconnect countdown
console_keys.py: The console's keys beyond the bindings: `?` help, the palette's commands, read-only refusals
console_layout.py: The console's panes and their widgets, as ServedeckApp.compose yields them
console_lifecycle.py: What a console does at start and at close that is no pane's: the collector, the workers
console_load_live.py: The Deck's load explainer: a worker samples while a model loads, the diagnosis after ready
console_log.py: The console's service log: the follower, its bounded queue and the drain that feeds the load
console_overview.py: The console's host overview: one loop reads it, the Overview pane and the header show it
console_processes.py: The console's Processes pane: listing, the kill dialog, and the kill run off the UI thread
console_protocol.py: The console as its parts see it: the `Console` protocol, and `Part`, what every part holds
console_record.py: The console's flight recorder: what the panes see goes to the recording; alerts; Timeline; replay
console_recovery.py: The console's recovery from a worker that raised: a state on its pane, its poll restarted
console_restart_watch.py: The console's restart watch: the guard before S/R, and the restart-loop detector
console_service.py: The console's service: the unit's state and its paced poll, the service line, S/X/R
console_serving.py: The console's serving state: the load strip and its ETA, readiness, metrics, the progress verdict
console_sleep.py: The console's sleep mode (vLLM): Z puts the engine to sleep, W wakes it
console_stacks.py: The console's evidence on demand: D dumps the engine's stacks per rank; a stall offers D and R
console_tabs.py: The console's tabs: which pane is on screen, focus that follows it, a pane's first look
console_tune.py: The console's Tune view (U): a tune.toml planned, confirmed, run in a worker, cancelled safely
console_workers.py: The one way the console starts a background worker: a failure becomes a state, never an exit
fleet_actions.py: The Fleet's actions on a host: planned (host re-read), confirmed, re-checked, audited
fleet_app.py: The Fleet pane: every host of a group on one screen; Enter opens one host's full Deck
fleet_run.py: The Fleet's loop: the Fleet pane, then a host's full console, then the Fleet again
messages.py: Every message the console's workers post to the app, in one place
replay_app.py: `servedeck replay`'s app: only the replay screen over a recording file; no host is contacted
terminal_driver.py: A terminal driver whose input thread sleeps while no key arrives
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.app.console import ServedeckApp

__all__ = ["ServedeckApp"]


def __getattr__(name: str) -> Any:
    if name == "ServedeckApp":
        from tui.app.console import ServedeckApp

        return ServedeckApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
