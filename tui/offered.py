"""Which console actions can be done now, and which keys belong where the operator is.

Plain rules (no Textual): the app asks them for its footer, its keys, its command
palette and its `?` screen, so all four offer the same things.
"""

from __future__ import annotations

# Actions that change the host: none of them in read-only mode.
_CHANGING = frozenset({"service", "sleep_mode", "kill_leftovers", "kill_selected", "tune"})
# Actions that send requests to the server: nothing to measure while its unit is stopped,
# and load that a read-only console (a browser visitor's) must not put on a serving box.
_LOADS_THE_SERVER = frozenset({"bench", "bench_pick", "bench_capacity"})
# The pane each tab shows first: focus goes there so its keys work without Tab.
_FOCUS_BY_TAB = {"deck": "#log-pane Log", "procs": "#procs-pane"}
# The key areas of each tab, besides the keys that work everywhere.
_SCOPES_BY_TAB = {"deck": ("log", "gpu", "gpu-table"), "procs": ("procs",)}


def refused_read_only(action: str) -> bool:
    """True for what a read-only console refuses: changing the host or loading its server."""
    return action in _CHANGING or action in _LOADS_THE_SERVER


def action_offered(
    action: str,
    parameters: tuple[object, ...],
    *,
    read_only: bool,
    has_unit: bool,
    active: bool | None,
    leftovers: int | None = None,
    tab: str | None = None,
    bench_running: bool = False,
    asleep: bool | None = None,
) -> bool:
    """False when the action cannot be done now (Textual then hides its key and ignores it).

    `active` is the unit's state: None while it is unknown (nothing to offer then).
    `leftovers` counts the last listing's leftovers: None while none was taken (the
    cleanup lists first, so it is offered). `tab` is the pane on screen. `asleep` is
    vLLM's sleep mode: None while the server has not answered /is_sleeping (no sleep
    mode: neither sleep nor wake is offered), else whether the engine sleeps now.
    """
    if read_only and refused_read_only(action):
        return False
    if action == "bench_cancel":  # in the footer while a benchmark runs, and only then
        return bench_running
    if action in _LOADS_THE_SERVER and has_unit and active is False:
        return False  # a stopped service has nobody to answer: S starts it first
    if action == "kill_leftovers":
        return leftovers is None or leftovers > 0
    if action == "tune":  # a tune starts and stops the unit: one is needed
        return has_unit
    if action == "stacks":  # the engine is found by the unit's main pid
        return has_unit and active is not False
    if action == "kill_selected":  # a selection exists only on the Processes pane
        return tab in (None, "procs")
    if action == "sleep_mode":
        if asleep is None or (has_unit and active is not True):
            return False
        return asleep if (parameters[0] if parameters else "") == "wake" else not asleep
    if action != "service":
        return True
    if not has_unit or active is None:
        return False
    verb = parameters[0] if parameters else ""
    if verb == "start":
        return not active
    return bool(active)  # stop and restart act on a running service


def focus_target(tab_id: str) -> str | None:
    """The selector of the widget that takes the focus when a tab is shown."""
    return _FOCUS_BY_TAB.get(tab_id)


def help_scopes(tab_id: str, screen_scope: str | None = None) -> tuple[str, ...]:
    """The key areas that work where the operator is (listed first by `?`), "app" last.

    `screen_scope` names the area of a preview screen on top (e.g. "summary"): a modal
    screen takes every key, so only its own work there.
    """
    if screen_scope is not None:
        return (screen_scope,)
    return (*_SCOPES_BY_TAB.get(tab_id, ()), "app")  # the area's own keys first


# The Fleet's actions on the highlighted row, and what each is called in a refusal.
FLEET_ROW_ACTIONS = {"fleet_service": "", "fleet_bench": "a benchmark", "fleet_cleanup": "clean up"}


def fleet_refusal(
    action: str,
    parameters: tuple[object, ...],
    *,
    host: str | None,
    reachable: bool,
    kind: str,
    read_only: bool,
) -> str | None:
    """Why a Fleet row action cannot run on the highlighted row (None: it can), one line.

    `kind`: "deck" (a host with a profile, reached over SSH), "demo" (a light simulated
    box), "prometheus" (a row from Prometheus, no profile). The footer offers only what
    returns None; a refused key says this line instead of failing after a dialog.
    """
    if action not in FLEET_ROW_ACTIONS:
        return None
    what = str(parameters[0]) if parameters else FLEET_ROW_ACTIONS[action]
    if host is None:
        return f"{what}: no host selected"
    if kind == "prometheus":
        return f"{host}: {what} needs the host's profile (this row comes from Prometheus only)"
    if not reachable:
        return f"{host}: {what} is not possible: the host is unreachable"
    if kind == "demo":
        return f"{host}: {what} is not available on a fleet demo box (Enter opens its console)"
    if read_only:
        return f"{host}: read-only: {what} is disabled"
    return None
