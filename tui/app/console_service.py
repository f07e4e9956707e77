"""The console's service: the unit's state and its paced poll, the service line, S/X/R.

A part of ServedeckApp. The unit is read every second while it changes or an action of
ours settles, then every SERVICE_SETTLED_POLL_S once steady; in between, a second's look
at what is free (the log's load phase, the main pid in /proc here) reads it at once when
it may have moved. S/X/R ask first (the restart guard before S and R), then run off the
UI thread; a refusal (read-only, the state unknown) is audited.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_health import SourceHealthPart
from tui.app.console_processes import ProcessesPart
from tui.app.console_protocol import Console, Part
from tui.app.console_record import RecordPart
from tui.app.console_restart_watch import RestartWatchPart
from tui.app.console_serving import ServingPart
from tui.app.console_stacks import StacksPart
from tui.app.console_workers import console_worker, failure_text
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.hints import short_setup_hint
from tui.procs.kill import leftovers_note
from tui.screens.confirm_action import ConfirmActionScreen
from tui.serving.unit.service import UnitState, audit_refusal
from tui.source_health import unknown_since_text
from widgets.service_line import ServiceLine

if TYPE_CHECKING:
    from tui.deck import Deck

SERVICE_POLL_S = 1.0  # a crashed or stopped server shows within 2 s
# A unit steady in its state (active, inactive or failed for SERVICE_SETTLE_S, no action
# of ours since) is read only this often: each read is a `systemctl show` process here and
# a request to the long-lived reader over SSH (tui/hosts/reader.py). Meanwhile a second's
# look at what is free (the log's load phase, the main pid in /proc here) reads it at once
# when it may have changed.
SERVICE_SETTLED_POLL_S = 10.0
SERVICE_SETTLE_S = 30.0
_SETTLED_STATES = frozenset(("active", "inactive", "failed"))
_NO_UNIT = "no systemd unit in this profile"


class ServicePart(Part):
    """The unit's state, its paced poll, the service line, and the service actions."""

    def __init__(
        self,
        deck: Deck,
        console: Console,
        sources: SourceHealthPart,
        record: RecordPart,
        procs: ProcessesPart,
        restart_watch: RestartWatchPart,
        serving: ServingPart,
        stacks: StacksPart,
    ) -> None:
        super().__init__(deck, console)
        self._stacks = stacks  # what a stall offers on the service line
        self._sources = sources
        self._record = record
        self._procs = procs
        self._restart_watch = restart_watch
        self._serving = serving
        self.unit_state: UnitState | None = None
        # The poll's pace (_read_due): when the unit last changed, when it was last read
        # and the log's load phase then (monotonic seconds).
        self._changed_s = float("-inf")
        self._read_s = float("-inf")
        self._read_phase: object = None
        self._error: str | None = None  # the last poll's error

    @console_worker("service", pane="service", what="read the service state")
    async def poll(self) -> None:
        controller = self.deck.service()
        if controller is None:
            hint = short_setup_hint(self.profile) or _NO_UNIT
            self.post_message(messages.ServiceUpdate(None, hint))
            return
        try:
            self.post_message(messages.ServiceUpdate(await controller.state()))
        except ServedeckError as error:
            self.post_message(messages.ServiceUpdate(None, str(error)))

    def update(self, message: messages.ServiceUpdate) -> None:
        serving = self._serving
        unreachable = (
            self._sources.health["host"].failing
            or getattr(self.deck.host, "connected", True) is False
        )
        if message.state is None and unreachable and self.deck.service() is not None:
            # Unknown, not stopped: keep no guessed state, offer no action until it is read.
            # (No unit: nothing is read from the host, so the host's state changes nothing.)
            self._sources.set("service", message.error or "unknown", SERVICE_POLL_S)
        elif message.state is not None:
            self._sources.ok("service")
            self._sources.host_reached()
            serving.load_as_of = None  # read over the connection now: the strip counts again
        previous = self.unit_state
        self.unit_state = message.state
        self._record.unit(message.state, message.error)
        state = message.state
        serving.tracker.observe_unit(None if state is None else state.is_active)
        if (
            state is not None
            and previous is not None
            and previous.is_active
            and not state.is_active
        ):
            serving.server_gone()
            serving.tracker.observe_exit(None, time.time())
            self._procs.refresh()
        self._restart_watch.observe(state=state)
        self._error = message.error  # kept: other redraws of the line say it too
        self.render_line(message.error)
        if previous is None or state is None or previous.is_active != state.is_active:
            self.console.refresh_bindings()  # Start or Stop: the footer offers what can be done now
        serving.update_load()
        now_s = time.monotonic()
        if previous is None or state is None or _unit_moved(previous, state):
            self._changed_s = now_s
        self._read_s, self._read_phase = now_s, serving.tracker.phase
        if message.state is not None or self.deck.service() is not None:
            self.console.poll_later(SERVICE_POLL_S, self._tick, "service-poll")

    def _tick(self) -> None:
        """Read the unit now if it may have changed, else look again in a second."""
        if self._read_due(time.monotonic()):
            self.poll()
        else:
            self.console.poll_later(SERVICE_POLL_S, self._tick, "service-poll")

    def _read_due(self, now_s: float) -> bool:
        controller = self.deck.service()
        state = self.unit_state
        if (
            controller is None
            or state is None
            # A state read that starts no command (the simulator's unit) costs nothing.
            or not getattr(controller, "state_costs_a_command", True)
            or state.active_state not in _SETTLED_STATES
            or now_s - self._changed_s < SERVICE_SETTLE_S
            or now_s - self._read_s >= SERVICE_SETTLED_POLL_S
            or self._serving.tracker.phase != self._read_phase  # a start, stop or crash logged
        ):
            return True
        main_pid = state.main_pid if state.is_active else None
        return bool(main_pid) and self.deck.host.is_local and not _pid_alive(main_pid or 0)

    def render_line(self, error: str | None = None) -> None:
        error = error if error is not None else self._error
        if self.unit_state is None and self._sources.service_unknown_since_s is not None:
            error = unknown_since_text(self._sources.service_unknown_since_s)
        listing = self._procs.listing
        note = None if listing is None else leftovers_note(listing.processes)
        serving = self._serving
        verdict = serving.engine_progress.verdict if serving.ready else None
        self.console.query_one(ServiceLine).show(
            self.unit_state,
            self.deck.host_label,
            serving.ready,
            error=error,
            leftovers=note,
            progress=verdict,
            offer=self._stacks.offer() if verdict and verdict.state == "stalled" else None,
            asleep=serving.asleep,
            sleep_level=serving.sleep_mode.level,
        )

    # --- service actions ------------------------------------------------------------
    def act(self, verb: str) -> None:
        """S/X/R: refused (no unit, state unknown, read-only) or asked, the guard first."""
        controller = self.deck.service()
        if controller is None:
            self.console.notify("This profile names no systemd unit.", severity="warning")
            return
        if self.unit_state is None and self._sources.service_unknown_since_s is not None:
            since = unknown_since_text(self._sources.service_unknown_since_s)
            self.console.notify(
                f"The service state is {since}: {verb} was not attempted.",
                title="Service",
                severity="warning",
            )
            append_audit(
                "service.refused",
                self.deck.host_label,
                {"unit": self.profile.service.unit, "action": verb, "reason": f"state {since}"},
            )
            return
        if self.profile.read_only:
            audit_refusal(controller.describe(verb), "read-only mode")  # type: ignore[attr-defined]
            self.console.notify(f"Read-only: {verb} is disabled.", severity="warning")
            return
        note = ""
        if verb in ("stop", "restart") and self.profile.service.engine == "vllm":
            note = "vLLM workers may survive the stop and hold GPU memory: check Processes (3)."
        action = controller.describe(verb)  # type: ignore[attr-defined]

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_confirmed(verb)

        def ask() -> None:
            self.console.push_screen(ConfirmActionScreen(action, note), confirmed)

        # start/restart: the guard first (leftovers holding GPU memory or the port).
        self._restart_watch.guard_then_confirm(verb, ask)

    @console_worker(
        "service-action",
        pane="service-action",
        what=lambda part, verb: f"{verb} {part.profile.service.unit} on {part.deck.host_label}",
        user_action=True,
    )
    async def run_confirmed(self, verb: str) -> None:
        """The action the operator confirmed (the guard passed), in its worker."""
        controller = self.deck.service()
        assert controller is not None
        try:
            outcome = await getattr(controller, verb)(confirmed=True)
        except ServedeckError as error:
            self.post_message(messages.ActionDone(verb, None, str(error)))
        else:
            self.post_message(messages.ActionDone(verb, outcome))

    def action_done(self, message: messages.ActionDone) -> None:
        if message.error or message.outcome is None or not message.outcome.ok:
            detail = message.error or (message.outcome.message if message.outcome else "")
            unit = self.profile.service.unit or "the service"
            self.console.notify(
                f"Tried to {message.verb} {unit} on {self.deck.host_label}; it failed: "
                f"{failure_text(detail)}. Nothing else was done.",
                title="Action failed",
                severity="error",
                timeout=10,
            )
        else:
            self.console.notify(f"{message.verb}: {message.outcome.message}", title="Service")
        if message.verb in ("start", "restart"):
            self._serving.server_gone()
        self._changed_s = time.monotonic()  # read it every second while it settles
        self.poll()


def _unit_moved(previous: UnitState, state: UnitState) -> bool:
    return (previous.active_state, previous.main_pid) != (state.active_state, state.main_pid)


def _pid_alive(pid: int) -> bool:
    """Whether a process of this machine lives (a stat of /proc, no command)."""
    return os.path.exists(f"/proc/{pid}")
