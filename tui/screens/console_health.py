"""The console's Health pane: interconnect doctor and GPU health, read when it is shown."""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual import work
from textual.message import Message

from tui.errors import ServedeckError
from tui.health.interconnect import InterconnectReport
from tui.health.report import HealthReport
from tui.screens.console_guard import while_open
from widgets.health_view import HealthView

# Re-read at most this often when the tab is shown again (the doctor runs ~15 commands).
HEALTH_REFRESH_S = 30.0


class HealthMixin:
    """Mixed into ServedeckApp (whose deck and profile it uses)."""

    _health_read_at_s: float = 0.0

    @dataclass
    class HealthReady(Message):
        interconnect: InterconnectReport | None
        health: HealthReport | None
        error: str | None = None

    def _show_health(self) -> None:
        if time.monotonic() - self._health_read_at_s >= HEALTH_REFRESH_S:
            self._health_read_at_s = time.monotonic()
            self._read_health()

    @work(exclusive=True, group="health")
    async def _read_health(self) -> None:
        from tui.health.doctor_run import run_demo_interconnect, run_interconnect
        from tui.health.health_run import collect_demo_health, collect_health

        deck = self.deck  # type: ignore[attr-defined]
        try:
            if deck.box is not None:
                interconnect = await run_demo_interconnect(deck.box)
                health = await collect_demo_health()
            else:
                interconnect = await run_interconnect(deck.host, self.profile)  # type: ignore[attr-defined]
                health = await collect_health(deck.host)
        except ServedeckError as error:
            self.post_message(self.HealthReady(None, None, str(error)))  # type: ignore[attr-defined]
        else:
            self.post_message(self.HealthReady(interconnect, health))  # type: ignore[attr-defined]

    @while_open
    def on_health_mixin_health_ready(self, message: HealthMixin.HealthReady) -> None:
        view = self.query_one(HealthView)  # type: ignore[attr-defined]
        if message.error:
            view.show_error(f"Health unreadable: {message.error}")
            self._health_read_at_s = 0.0
            return
        view.show(message.interconnect, message.health)
