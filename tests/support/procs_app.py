"""A tiny app around the GPU processes pane and the kill modal, for tests and snapshots."""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from tui.hosts.base import Host
from tui.procs import ClassifyContext, KillReport, ProcListing, kill_processes
from tui.procs.listing import GpuHints
from tui.screens.kill_confirm import KillConfirmation, KillConfirmScreen
from widgets.procs_pane import ProcsPane


class ProcsTestApp(App[None]):
    BINDINGS = [Binding("k", "kill_leftovers", "Kill leftovers", id="kill-leftovers")]

    @dataclass
    class KillDone(Message):
        report: KillReport

    def __init__(
        self,
        listing: ProcListing,
        now_s: float,
        host: Host | None = None,
        context: ClassifyContext | None = None,
        reread_hints: GpuHints = None,
    ) -> None:
        super().__init__()
        self.listing = listing
        self.now_s = now_s
        self.host = host
        self.context = context or ClassifyContext()
        self.reread_hints = reread_hints
        self.reports: list[KillReport] = []

    def compose(self) -> ComposeResult:
        yield ProcsPane(id="procs")
        yield Static("", id="status")

    def on_mount(self) -> None:
        self.query_one(ProcsPane).show_listing(self.listing, self.now_s)

    def action_kill_leftovers(self) -> None:
        targets = self.listing.of_class("leftover", "foreign")
        self.push_screen(
            KillConfirmScreen(self.listing.host_label, targets, timeout_s=2.0), self._confirmed
        )

    def _confirmed(self, confirmation: KillConfirmation | None) -> None:
        if confirmation is not None and self.host is not None:
            self.query_one("#status", Static).update("killing...")
            self._kill(confirmation)

    @work(exclusive=True, group="kill")
    async def _kill(self, confirmation: KillConfirmation) -> None:
        assert self.host is not None

        async def reread() -> GpuHints:
            return self.reread_hints

        report = await kill_processes(
            self.host,
            confirmation.targets,
            self.context,
            read_only=False,
            timeout_s=2.0,
            confirmed_foreign=confirmation.confirmed_foreign,
            reread=reread,
            release_wait_s=0.0,
        )
        self.post_message(self.KillDone(report))

    def on_procs_test_app_kill_done(self, message: KillDone) -> None:
        self.reports.append(message.report)
        self.query_one("#status", Static).update(message.report.summary_line())


def now() -> float:
    return time.time()
