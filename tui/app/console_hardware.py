"""The console's Health pane: interconnect doctor and GPU health; XIDs followed live.

The doctor and the full health read run when the pane is shown. Once the first GPU
sample arrives, the GPU counters are read once and the kernel log is followed for
XIDs for the console's life: each new XID reaches the Health pane, the GPU table's
badge, the recording (Timeline) and the alert rules within a second or two.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_guard import console_closing
from tui.app.console_health import SourceHealthPart
from tui.app.console_protocol import Console, Part
from tui.app.console_record import RecordPart
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.health.badge import badges
from tui.screens.confirm_action import ConfirmActionScreen
from tui.serving.unit.service import ServiceAction
from widgets.gpu_pane import GpuPane
from widgets.health_view import HealthView

if TYPE_CHECKING:  # loaded by the checks themselves, after the first frame
    from tui.deck import Deck
    from tui.gpu.model import GpuBoxSnapshot
    from tui.health.interconnect.rules import InterconnectReport
    from tui.health.report import HealthReport
    from tui.health.xid.decode import XidEvent

# Re-read at most this often when the tab is shown again (the doctor runs ~15 commands).
HEALTH_REFRESH_S = 30.0
# The counters change slowly (a remap, an ECC error); `nvidia-smi -q` costs ~1 s of CPU.
HW_COUNTERS_S = 120.0
XIDS_KEPT = 500  # followed events kept for the pane (a storm of XIDs must not grow forever)


class HardwarePart(Part):
    """The Health pane, the GPU table's badges, the XID follow and the probe."""

    def __init__(
        self, deck: Deck, console: Console, sources: SourceHealthPart, record: RecordPart
    ) -> None:
        super().__init__(deck, console)
        self._sources = sources
        self._record = record
        self._health_read_at_s = 0.0
        self._hw_report: HealthReport | None = None
        self._hw_interconnect: InterconnectReport | None = None
        self._xids: tuple[XidEvent, ...] = ()
        self._xid_follow_started = False

    def watch(self, snapshot: GpuBoxSnapshot) -> None:
        """Called with each GPU sample: the first one with GPUs starts the XID follow."""
        if self._xid_follow_started or not snapshot.available or not snapshot.statics:
            return
        self._xid_follow_started = True
        from tui.health.xid.follow import gpu_buses

        buses = gpu_buses(snapshot) or {}
        self._poll_hw_counters(buses)
        self._follow_xids(buses)

    @console_worker("hw-counters", pane="kernel", what="read the GPU health counters")
    async def _poll_hw_counters(self, buses: dict[str, int]) -> None:
        """The counters (remaps, ECC, NVLink errors, throttling) now and every few minutes."""
        while not console_closing(self.console):
            report = await self.deck.health_counters(buses)
            self.post_message(messages.HardwareCounters(report))
            await asyncio.sleep(HW_COUNTERS_S)

    @console_worker("xid", pane="kernel", what="follow the kernel log for XIDs")
    async def _follow_xids(self, buses: dict[str, int]) -> None:
        from tui.health.xid.follow import FollowState, follow_xids, kernel_journal_file

        journal = kernel_journal_file()
        if not self.deck.has_kernel_log and journal is None:
            self.post_message(messages.KernelLogState(FollowState(True, "simulated")))
            return
        await follow_xids(
            self.deck.host,
            buses,
            lambda event: self.post_message(messages.XidSeen(event)),
            lambda state: self.post_message(messages.KernelLogState(state)),
            journal_file=journal,
        )

    def _show_hardware(self) -> None:
        """The merged report to the Health pane and the GPU table's badges."""

        if self._hw_report is None:
            return
        self.console.query_one(HealthView).show(self._hw_interconnect, self._hw_report)
        self.console.query_one("#gpu-pane", GpuPane).set_health(badges(self._hw_report))

    def counters_read(self, message: messages.HardwareCounters) -> None:
        self._hw_report = _with_events(message.health, list(self._xids))
        self._show_hardware()

    def xid_seen(self, message: messages.XidSeen) -> None:
        event = message.event
        self._xids = (*self._xids, event)[-XIDS_KEPT:]
        self._record.xid(event)
        if self._hw_report is not None:
            self._hw_report = _with_events(self._hw_report, [event])
        self._show_hardware()

    def kernel_log_state(self, message: messages.KernelLogState) -> None:
        state = message.state
        if state.following:
            self._sources.ok("kernel")
        else:
            self._sources.set("kernel", state.reason, None)
        view = self.console.query_one(HealthView)
        if state.following:
            view.show_kernel(f"Kernel log: following XIDs ({state.source})", failing=False)
        else:
            view.show_kernel(self._sources.health["kernel"].describe(), failing=True)

    def show(self) -> None:
        """The Health pane came on screen: read it again unless read in the last half minute."""
        if time.monotonic() - self._health_read_at_s >= HEALTH_REFRESH_S:
            self._health_read_at_s = time.monotonic()
            self._read_health()

    @console_worker("health", pane="health", what="read the hardware health")
    async def _read_health(self) -> None:
        deck = self.deck
        try:
            interconnect = await deck.interconnect()
            health = await deck.hardware_health()
        except ServedeckError as error:
            self.post_message(messages.HealthReady(None, None, str(error)))
        else:
            self.post_message(messages.HealthReady(interconnect, health))

    def probe(self) -> None:
        """`p`: check that the GPUs are idle, then ask, then run the probe."""
        if self.profile.read_only:
            self.console.notify("Read-only: the probe loads every GPU.", severity="warning")
            return
        self._check_probe()

    @console_worker(
        "probe", pane="health", what="check that the GPUs are idle for the probe", user_action=True
    )
    async def _check_probe(self) -> None:
        from tui.ops.probe_run import probe_refusal

        try:
            why, gpus = await probe_refusal(self.deck)
        except ServedeckError as error:
            why, gpus = str(error), 0
        self.post_message(messages.ProbeChecked(why, gpus))

    def probe_checked(self, message: messages.ProbeChecked) -> None:
        view = self.console.query_one(HealthView)
        if message.refusal:
            view.show_probe(f"Probe refused: {message.refusal}")
            self.console.notify(message.refusal, title="Probe refused", severity="warning")
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

        self.console.push_screen(ConfirmActionScreen(action, note), confirmed)

    @console_worker("probe", pane="health", what="run the interconnect probe", user_action=True)
    async def _run_probe(self) -> None:
        from tui.ops.probe_run import run_and_record

        try:
            result = await run_and_record(self.deck)
        except ServedeckError as error:
            self.post_message(messages.ProbeDone(None, str(error)))
        else:
            self.post_message(messages.ProbeDone(result))

    def probe_done(self, message: messages.ProbeDone) -> None:
        view = self.console.query_one(HealthView)
        if message.result is None:
            view.show_probe(f"Probe failed: {message.error}")
            return
        view.show_probe(f"Probe: {message.result['verdict']}")

    def health_read(self, message: messages.HealthReady) -> None:
        view = self.console.query_one(HealthView)
        if message.error:
            view.show_error(f"Health unreadable: {message.error}")
            self._health_read_at_s = 0.0
            return

        self._hw_interconnect = message.interconnect
        if message.health is not None:
            self._hw_report = _with_events(message.health, list(self._xids))
            self._show_hardware()
        else:
            view.show(message.interconnect, message.health)


def _with_events(report: HealthReport, events: list[XidEvent]) -> HealthReport:
    """The report with these XIDs; the health checks load with the first report."""
    from tui.health.report import with_events

    return with_events(report, events)
