"""The console's Health pane: interconnect doctor and GPU health, read when it is shown."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_guard import while_open
from tui.app.console_workers import console_worker
from tui.app.parts import ConsoleParts
from tui.errors import ServedeckError
from widgets.health_view import HealthView

if TYPE_CHECKING:  # loaded by the checks themselves, when the pane is first shown
    pass

# Re-read at most this often when the tab is shown again (the doctor runs ~15 commands).
HEALTH_REFRESH_S = 30.0


class HardwareHealthMixin(ConsoleParts):
    """Mixed into ServedeckApp (whose deck and profile it uses)."""

    _health_read_at_s: float = 0.0

    def _show_health(self) -> None:
        if time.monotonic() - self._health_read_at_s >= HEALTH_REFRESH_S:
            self._health_read_at_s = time.monotonic()
            self._read_health()

    @console_worker("health", pane="health", what="read the hardware health")
    async def _read_health(self) -> None:
        from tui.health.doctor_run import run_demo_interconnect, run_interconnect
        from tui.health.health_run import collect_demo_health, collect_health

        deck = self.deck
        try:
            if deck.box is not None:
                interconnect = await run_demo_interconnect(deck.box)
                health = await collect_demo_health()
            else:
                interconnect = await run_interconnect(deck.host, self.profile)
                health = await collect_health(deck.host)
        except ServedeckError as error:
            self.post_message(messages.HealthReady(None, None, str(error)))
        else:
            self.post_message(messages.HealthReady(interconnect, health))

    def action_probe(self) -> None:
        """`p`: check that the GPUs are idle, then ask, then run the probe."""
        if self.profile.read_only:
            self.notify("Read-only: the probe loads every GPU.", severity="warning")
            return
        self._check_probe()

    @console_worker(
        "probe", pane="health", what="check that the GPUs are idle for the probe", user_action=True
    )
    async def _check_probe(self) -> None:
        from tui.health.probe_run import probe_refusal

        try:
            why, gpus = await probe_refusal(self.deck)
        except ServedeckError as error:
            why, gpus = str(error), 0
        self.post_message(messages.ProbeChecked(why, gpus))

    @while_open
    def on_servedeck_app_probe_checked(self, message: messages.ProbeChecked) -> None:
        from tui.screens.confirm_action import ConfirmActionScreen
        from tui.service import ServiceAction

        view = self.query_one(HealthView)
        if message.refusal:
            view.show_probe(f"Probe refused: {message.refusal}")
            self.notify(message.refusal, title="Probe refused", severity="warning")
            return
        python = self.profile.service.python or "(service.python not set)"
        action = ServiceAction(
            self.deck.host_label,
            f"{message.gpus} GPUs",
            "probe",
            (python, "-", "<servedeck probe script on stdin>"),
        )
        note = "Loads every GPU for up to 90 s: P2P copies, then an all-reduce sweep 8 B..1 GiB."

        def confirmed(yes: bool | None) -> None:
            if yes:
                view.show_probe("Probe running (up to 90 s) ...")
                self._run_probe()

        self.push_screen(ConfirmActionScreen(action, note), confirmed)

    @console_worker("probe", pane="health", what="run the interconnect probe", user_action=True)
    async def _run_probe(self) -> None:
        from tui.health.probe_run import run_and_record

        try:
            result = await run_and_record(self.deck)
        except ServedeckError as error:
            self.post_message(messages.ProbeDone(None, str(error)))
        else:
            self.post_message(messages.ProbeDone(result))

    @while_open
    def on_servedeck_app_probe_done(self, message: messages.ProbeDone) -> None:
        view = self.query_one(HealthView)
        if message.result is None:
            view.show_probe(f"Probe failed: {message.error}")
            return
        view.show_probe(f"Probe: {message.result['verdict']}")

    @while_open
    def on_servedeck_app_health_ready(self, message: messages.HealthReady) -> None:
        view = self.query_one(HealthView)
        if message.error:
            view.show_error(f"Health unreadable: {message.error}")
            self._health_read_at_s = 0.0
            return
        view.show(message.interconnect, message.health)
