"""The console's Processes pane: listing, the kill dialog, and the kill run off the UI thread."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual import work
from textual.widgets import Static, TabbedContent

from tui.errors import ServedeckError
from tui.gpu.model import GpuBoxSnapshot
from tui.procs import kill_processes, list_gpu_processes
from tui.procs.gpu_hints import deck_context
from tui.procs.kill import leftovers
from tui.screens.console_guard import while_open
from tui.screens.kill_confirm import KillConfirmation, KillConfirmScreen
from widgets.procs_pane import ProcsPane

if TYPE_CHECKING:
    from tui.app import ServedeckApp

PROCS_POLL_S = 3.0


class ProcessesMixin:
    """Mixed into ServedeckApp (whose messages and state it uses)."""

    @work(exclusive=True, group="procs")
    async def _refresh_procs(self) -> None:
        try:
            snapshot = self.last_gpu if self.last_gpu and self.last_gpu.available else None
            listing = await list_gpu_processes(
                self.deck.host, snapshot, await deck_context(self.deck)
            )
        except ServedeckError as error:
            self.notify(f"processes: {error}", severity="error")
            return
        self.post_message(self.ProcsUpdate(listing))

    @while_open
    def on_servedeck_app_procs_update(self, message: ServedeckApp.ProcsUpdate) -> None:
        self.listing = message.listing
        self._record_listing(message.listing)
        count = len(leftovers(message.listing.processes))
        status = f"{len(message.listing.processes)} GPU process(es) on {message.listing.host_label}"
        if count:
            status += f"; {count} leftover(s): press K to clean up"
        self.query_one("#procs-status", Static).update(status)
        self.query_one(ProcsPane).show_listing(message.listing, time.time())
        if self.query_one(TabbedContent).active == "procs":
            self.poll_later(PROCS_POLL_S, self._refresh_procs, "procs-poll")

    def _confirm_kill(self, targets: list) -> None:  # type: ignore[type-arg]
        if self.profile.read_only:
            self.notify("Read-only: killing is disabled.", severity="warning")
            return
        if not targets:
            self.notify("No leftover GPU processes.", title="Processes")
            return

        def confirmed(confirmation: KillConfirmation | None) -> None:
            if confirmation is not None:
                self._kill(confirmation)

        self.push_screen(
            KillConfirmScreen(self.deck.host_label, targets, timeout_s=15.0), confirmed
        )

    def action_kill_leftovers(self) -> None:
        self._kill_leftovers_after_refresh()

    @work(exclusive=True, group="procs")
    async def _kill_leftovers_after_refresh(self) -> None:
        """Re-list first: the modal must show what is there now, not a stale listing."""
        snapshot = self.last_gpu if self.last_gpu and self.last_gpu.available else None
        listing = await list_gpu_processes(self.deck.host, snapshot, await deck_context(self.deck))
        self.post_message(self.ProcsUpdate(listing))
        self.call_later(self._confirm_kill, leftovers(listing.processes))

    def action_kill_selected(self) -> None:
        selected = self.query_one(ProcsPane).selected() if self._tab_visible("procs") else None
        if selected is None:
            self.notify("Select a process in Processes (3) first.", severity="warning")
            return
        self._confirm_kill([selected])

    @work(exclusive=True, group="kill")
    async def _kill(self, confirmation: KillConfirmation) -> None:
        async def reread() -> GpuBoxSnapshot | None:
            source = await self.deck.gpu_source()
            snapshot = await source.sample()
            return snapshot if snapshot.available else None

        try:
            report = await kill_processes(
                self.deck.host,
                confirmation.targets,
                await deck_context(self.deck),
                read_only=self.profile.read_only,
                confirmed_foreign=confirmation.confirmed_foreign,
                reread=reread,
                action="console kill",
            )
        except ServedeckError as error:
            self.post_message(self.KillDone(None, str(error)))
        else:
            self.post_message(self.KillDone(report))

    @while_open
    def on_servedeck_app_kill_done(self, message: ServedeckApp.KillDone) -> None:
        if message.report is None:
            self.notify(f"kill failed: {message.error}", severity="error", timeout=10)
        else:
            severity = "information" if message.report.all_ended else "warning"
            self.notify(
                message.report.summary_line(), title="Processes", severity=severity, timeout=10
            )
        self._refresh_procs()
