"""The console's Processes pane: listing, the kill dialog, and the kill run off the UI thread."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from textual import work
from textual.widgets import Static, TabbedContent

from tui.errors import ServedeckError
from tui.gpu.model import GpuBoxSnapshot
from tui.procs import kill_processes, list_gpu_processes
from tui.procs.gpu_hints import deck_context
from tui.procs.kill import ReadOnlyError, leftovers, refuse_before_asking
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
        count = len(leftovers(message.listing.processes))
        status = f"{len(message.listing.processes)} GPU process(es) on {message.listing.host_label}"
        if count:
            status += f"; {count} leftover(s): press K to clean up"
        self.query_one("#procs-status", Static).update(status)
        self.refresh_bindings()  # K is offered only while there are leftovers
        self.query_one(ProcsPane).show_listing(message.listing, time.time())
        if self.query_one(TabbedContent).active == "procs":
            self.poll_later(PROCS_POLL_S, self._refresh_procs, "procs-poll")

    def _confirm_kill(self, targets: list) -> None:  # type: ignore[type-arg]
        if not targets:
            self.notify("No leftover GPU processes.", title="Processes")
            return
        try:  # the same refusals as `servedeck kill`, audited, before any dialog
            targets, refused = refuse_before_asking(
                self.deck.host_label,
                targets,
                read_only=self.profile.read_only,
                action="console kill",
            )
        except ReadOnlyError:
            self.notify("Read-only: killing is disabled.", severity="warning")
            return
        for pid, reason in refused.items():
            self.notify(f"pid {pid}: {reason}", title="Processes", severity="warning")
        if not targets:
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
        final: list[GpuBoxSnapshot] = []  # the kill's last GPU re-check

        async def reread() -> GpuBoxSnapshot | None:
            source = await self.deck.gpu_source()
            snapshot = await source.sample()
            final[:] = [snapshot]
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
            return
        # List from that re-check, not from the console's last GPU sample: an older sample
        # still names the killed workers, which then show as defunct while the report
        # says their memory was freed.
        listing = None
        if final and final[0].available:
            with contextlib.suppress(ServedeckError):
                listing = await list_gpu_processes(
                    self.deck.host, final[0], await deck_context(self.deck)
                )
        self.post_message(self.KillDone(report, listing=listing, gpu=final[0] if listing else None))

    @while_open
    def on_servedeck_app_kill_done(self, message: ServedeckApp.KillDone) -> None:
        gpu = message.gpu
        if gpu is not None and (self.last_gpu is None or gpu.taken_at_s > self.last_gpu.taken_at_s):
            self._show_gpus(gpu)  # a fresher sample: later polls must not list from an older one
        if message.listing is not None:
            self.on_servedeck_app_procs_update(self.ProcsUpdate(message.listing))
        if message.report is None:
            self.notify(f"kill failed: {message.error}", severity="error", timeout=10)
        else:
            severity = "information" if message.report.all_ended else "warning"
            self.notify(
                message.report.summary_line(), title="Processes", severity=severity, timeout=10
            )
        if message.listing is None:
            self._refresh_procs()
