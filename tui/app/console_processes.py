"""The console's Processes pane: listing, the kill dialog, and the kill run off the UI thread.

A part of ServedeckApp: it owns the last listing (the service line and the K key read it)
and the host's reboot as a listing saw it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_health import SourceHealthPart
from tui.app.console_protocol import Console, Part
from tui.app.console_record import RecordPart
from tui.app.console_workers import console_worker, failure_text
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.gpu.model import GpuBoxSnapshot
from tui.ops.gpu_hints import deck_context
from tui.procs import ProcListing, kill_processes, list_gpu_processes
from tui.procs.kill import DEFAULT_TIMEOUT_S, ReadOnlyError, leftovers, refuse_before_asking
from tui.procs.model import GpuProcess
from tui.screens.kill_confirm import KillConfirmation, KillConfirmScreen
from tui.source_health import rebooted
from widgets.procs_pane import ProcsPane

if TYPE_CHECKING:
    from tui.deck import Deck

PROCS_POLL_S = 3.0


class ProcessesPart(Part):
    """The Processes pane: its listing, the kill dialog and the kill."""

    def __init__(
        self,
        deck: Deck,
        console: Console,
        sources: SourceHealthPart,
        record: RecordPart,
        *,
        host_rebooted: Callable[[], None],
    ) -> None:
        super().__init__(deck, console)
        self._sources = sources
        self._record = record
        self._host_rebooted_hook = host_rebooted  # a new boot: the console reads the host again
        self.listing: ProcListing | None = None
        self.rebooted_at_s: float | None = None

    def _gpu_sample(self) -> GpuBoxSnapshot | None:
        last = self.console.last_gpu
        return last if last and last.available else None

    @console_worker("procs", pane="procs", what="list the GPU processes")
    async def refresh(self) -> None:
        listing = await list_gpu_processes(
            self.deck.host, self._gpu_sample(), await deck_context(self.deck)
        )
        self.post_message(messages.ProcsUpdate(listing))

    def refresh_if_shown(self) -> None:
        if self.console.active_tab() == "procs":
            self.refresh()

    def show_listing(self, message: messages.ProcsUpdate) -> None:
        previous, self.listing = self.listing, message.listing
        self._record.listing(message.listing)
        count = len(leftovers(message.listing.processes))
        status = f"{len(message.listing.processes)} GPU process(es) on {message.listing.host_label}"
        if count:
            status += f"; {count} leftover(s): press K to clean up"
        if previous is not None and rebooted(previous.boot_id, message.listing.boot_id):
            self._host_rebooted(message.listing.taken_at_s)
        if self.rebooted_at_s is not None:
            stamp = time.strftime("%H:%M:%S", time.localtime(self.rebooted_at_s))
            status += f" · host rebooted (new boot id, seen {stamp}): this boot's processes only"
        self._sources.show_procs_status(status)
        if previous is None or (count > 0) != bool(leftovers(previous.processes)):
            # K is offered only while there are leftovers. Only then: each footer redraw
            # rebuilds every key's widget (main-thread time at every listing).
            self.console.refresh_bindings()
        self.console.render_service_line()  # the Deck says what the listing left on the GPUs
        self._sources.ok("procs")
        self.console.query_one(ProcsPane).show_listing(message.listing, time.time())
        if self.console.active_tab() == "procs":
            self.console.poll_later(PROCS_POLL_S, self.refresh, "procs-poll")

    def _host_rebooted(self, seen_at_s: float) -> None:
        """A new boot id: nothing listed before it may be shown or offered for a kill again."""
        self.rebooted_at_s = seen_at_s
        screen = self.console.screen
        if isinstance(screen, KillConfirmScreen):
            screen.dismiss(None)  # its targets belong to the previous boot
        self.console.notify(
            f"{self.deck.host_label} rebooted (its boot id changed): processes listed before "
            "are void; the list shows this boot's only.",
            title="Host rebooted",
            severity="warning",
            timeout=10,
        )
        self._host_rebooted_hook()

    def confirm_kill(self, targets: list[GpuProcess]) -> None:
        if not targets:
            self.console.notify("No leftover GPU processes.", title="Processes")
            return
        try:  # the same refusals as `servedeck kill`, audited, before any dialog
            targets, refused = refuse_before_asking(
                self.deck.host_label,
                targets,
                read_only=self.profile.read_only,
                action="console kill",
            )
        except ReadOnlyError:
            self.console.notify("Read-only: killing is disabled.", severity="warning")
            return
        for pid, reason in refused.items():
            self.console.notify(f"pid {pid}: {reason}", title="Processes", severity="warning")
        if not targets:
            return

        def confirmed(confirmation: KillConfirmation | None) -> None:
            if confirmation is not None:
                self.kill(confirmation)

        self.console.push_screen(
            KillConfirmScreen(self.deck.host_label, targets, timeout_s=DEFAULT_TIMEOUT_S), confirmed
        )

    @console_worker(
        "procs-kill",  # its own group: a procs poll starting meanwhile must not cancel K
        pane="procs",
        what=lambda app: f"list the leftover GPU processes on {app.deck.host_label}",
        user_action=True,
    )
    async def kill_leftovers(self) -> None:
        """K: re-list first, so the modal shows what is there now, not a stale listing."""
        listing = await list_gpu_processes(
            self.deck.host, self._gpu_sample(), await deck_context(self.deck)
        )
        self.post_message(messages.ProcsUpdate(listing))
        self.console.call_later(self.confirm_kill, leftovers(listing.processes))

    def kill_selected(self) -> None:
        shown = self.console.tab_visible("procs")
        selected = self.console.query_one(ProcsPane).selected() if shown else None
        if selected is None:
            self.console.notify("Select a process in Processes (3) first.", severity="warning")
            return
        self.confirm_kill([selected])

    @console_worker(
        "kill",
        pane="procs",
        what=lambda app, confirmation: (
            f"end {len(confirmation.targets)} GPU process(es) on {app.deck.host_label}"
        ),
        user_action=True,
    )
    async def kill(self, confirmation: KillConfirmation) -> None:
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
            self.post_message(messages.KillDone(None, str(error)))
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
        self.post_message(
            messages.KillDone(report, listing=listing, gpu=final[0] if listing else None)
        )

    def kill_done(self, message: messages.KillDone) -> None:
        gpu, last = message.gpu, self.console.last_gpu
        if gpu is not None and (last is None or gpu.taken_at_s > last.taken_at_s):
            self.console.show_gpus(gpu)  # fresher: later polls must not list from an older one
        if message.listing is not None:
            self.show_listing(messages.ProcsUpdate(message.listing))
        report = message.report
        if report is None:
            errors = [message.error or "unknown error"]
        else:
            errors = [o.detail for o in report.outcomes if o.outcome == "error"]
        if report is None or (errors and not any(o.ended for o in report.outcomes)):
            # The helper never ran (host unreachable) or failed: say so; nothing was signalled.
            count = len(report.outcomes) if report is not None else "the"
            reason = failure_text(errors[0])
            self.console.notify(
                f"Tried to end {count} process(es) on {self.deck.host_label}; it failed: "
                f"{reason}. Nothing else was done.",
                title="Kill failed",
                severity="error",
                timeout=10,
            )
            if report is None:  # kill_processes audits its own outcomes
                append_audit("kill-failed", self.deck.host_label, {"error": reason})
        else:
            self.console.notify(
                report.summary_line(),
                title="Processes",
                severity="information" if report.all_ended else "warning",
                timeout=10,
            )
        if message.listing is None:
            self.refresh()
