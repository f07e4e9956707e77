"""The console's flight recorder: what the panes see goes to the recording; alerts; Timeline; replay.

A part of ServedeckApp: the console and the other parts hand it what they see. Each hook
is a queue put or a comparison, so recording costs the event loop almost nothing; SQLite
runs in the recorder's own thread.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tui.app.console_protocol import Console, Part
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.logs.line import LineBatch, warning_indices, warnings_or_worse
from tui.ops.gpu_hints import deck_context
from tui.procs import list_gpu_processes
from tui.record.execinfo import read_exec
from tui.serving.load.tracker import Phase, vllm_line_times_s

if TYPE_CHECKING:  # the recorder (SQLite, alerts, webhook) loads after the first frame
    from textual.notifications import SeverityLevel

    from tui.alerts.engine import AlertChange
    from tui.deck import Deck
    from tui.gpu.model import GpuBoxSnapshot
    from tui.health.xid.decode import XidEvent
    from tui.logs.line import LogLine
    from tui.procs.model import ProcListing
    from tui.record.session import ConsoleRecording
    from tui.serving.load.live import LiveLoad
    from tui.serving.load.tracker import LoadProgress
    from tui.serving.metrics import ServerMetrics
    from tui.serving.readiness import Readiness
    from tui.serving.unit.service import UnitState

RECORD_PROCS_S = 10.0
# While nothing a leftover would change has changed (the GPU holders NVML names, the unit's
# state and main pid), the recorder's listing repeats only this often: the wide scan reads
# every process of the host (~10-25 ms a listing), the main share of an idle console's CPU.
RECORD_PROCS_STEADY_S = 30.0
RECORD_FILES_S = 2.0
BACKLOG_S = 3.0
# Actions that change the host: refused while a replay is on screen.
ACTING = frozenset(
    (
        "service",
        "kill_leftovers",
        "kill_selected",
        "bench",
        "bench_pick",
        "bench_cancel",
        "export_summary",
    )
)
_SEVERITY: dict[str, SeverityLevel] = {
    "critical": "error",
    "warning": "warning",
    "info": "information",
}


def recording_wanted() -> bool:
    """`SERVEDECK_RECORD=0` opens the console without recording (measurements, old disks)."""
    return os.environ.get("SERVEDECK_RECORD", "1") not in ("0", "no", "off", "false")


def recorded_lines(
    lines: Sequence[LogLine], started_s: float, now_s: float
) -> list[tuple[LogLine, float | None]]:
    """The warnings of a drained batch worth recording, each with its own clock.

    New log lines only: the backlog the log pane shows at start is the past (a line with
    its own clock from before the console opened at `started_s`, or any line in the
    first seconds without one), and recording it again at every start would repeat it.
    """
    settled = now_s - started_s > BACKLOG_S
    cutoff_s = started_s - BACKLOG_S
    kept: list[tuple[LogLine, float | None]] = []
    if isinstance(lines, LineBatch):  # no cursors; a LogLine built only for a line kept
        where = warning_indices(lines.levels)  # observe_logs drops the rest: no clocks
        texts = lines.texts
        clocks = vllm_line_times_s([texts[i] for i in where])
        keep = [
            (i, own)
            for i, own in zip(where, clocks, strict=True)
            if (settled if own is None else own >= cutoff_s)
        ]
        return list(zip(lines.pick(i for i, _ in keep), (own for _, own in keep), strict=True))
    warnings = warnings_or_worse(lines)
    for line, own in zip(warnings, vllm_line_times_s([w.text for w in warnings]), strict=True):
        if line.cursor is None and (own is None and not settled):
            continue
        if own is not None and own < cutoff_s:
            continue
        kept.append((line, own))
    return kept


class RecordPart(Part):
    """The recording of one console: its hooks, the quiet process listing, alerts, Timeline."""

    def __init__(self, deck: Deck, console: Console) -> None:
        super().__init__(deck, console)
        self.recording: ConsoleRecording | None = None
        self._recorded_pid: int | None = None
        self._log_started_s: float | None = None
        # What the last listing saw (listing_key) and when (monotonic), for the steady skip.
        self._listed_key: object = None
        self._listed_at_s: float | None = None

    def start(self) -> None:
        from tui.record.session import ConsoleRecording

        secrets = tuple(s for s in (self.deck.api_key,) if s)
        self.recording = ConsoleRecording(
            self.profile,
            self.deck.host_label,
            notify=self._alert_changed,
            extra_secrets=secrets,
            enabled=recording_wanted(),
        )
        self.console.set_interval(RECORD_FILES_S, self._record_files, name="record-files")
        self.console.set_interval(RECORD_PROCS_S, self._record_procs, name="record-procs")

    def stop(self) -> None:
        if self.recording is not None:
            self.recording.close()

    # --- hooks the console and the other parts call -------------------------------------------
    def gpu(self, snapshot: GpuBoxSnapshot) -> None:
        if self.recording is not None:
            self.recording.feed.observe_gpu(snapshot)
            self.recording.monitor.observe_gpu(snapshot)

    def unit(self, state: UnitState | None, error: str | None) -> None:
        if self.recording is None:
            return
        if error == "no systemd unit in this profile":
            return
        self.recording.feed.observe_unit(state, time.time(), error)
        if state is not None:
            self.recording.monitor.observe_unit(state)
            if state.main_pid and state.main_pid != self._recorded_pid:
                self._recorded_pid = state.main_pid
                self._record_exec(state.main_pid, state.started_at_s or time.time())

    @console_worker(
        "record-exec", pane="record", what="record the service command line", exclusive=False
    )
    async def _record_exec(self, pid: int, started_s: float) -> None:
        if self.recording is None:
            return
        found = await read_exec(self.deck.host, pid, self.recording.feed.extra_secrets)
        if found is not None and self.recording is not None:
            self.recording.feed.observe_exec(pid, found[0], found[1], started_s)

    def lines(self, lines: Sequence[LogLine]) -> None:
        """A drained batch: its new warnings (recorded_lines) go to the recording."""
        if self.recording is None:
            return
        now = time.time()
        if self._log_started_s is None:
            self._log_started_s = now
        kept = recorded_lines(lines, self._log_started_s, now)
        if kept:
            self.recording.feed.observe_logs(kept, now)  # redacted as one batch

    def load_live(self, live: LiveLoad | None) -> None:
        if self.recording is not None:
            self.recording.feed.observe_load_live(live)

    def progress(self, progress: LoadProgress) -> None:
        if self.recording is not None:
            stopped = progress.phase in (Phase.STOPPED, Phase.FAILED)
            if stopped and self.recording.feed.phase_seen not in (None, progress.phase):
                self.recording.monitor.observe_stopped(progress.at_s)
            self.recording.feed.observe_progress(progress)

    def readiness(self, readiness: Readiness) -> None:
        if self.recording is not None:
            self.recording.feed.observe_readiness(readiness)
            if readiness.checked:
                self.recording.monitor.observe_ready(readiness.ready, readiness.at_s)

    def metrics(self, metrics: ServerMetrics | None) -> None:
        if self.recording is None:
            return
        if metrics is not None:
            self.recording.feed.observe_metrics(metrics)
            self.recording.monitor.observe_metrics(metrics)
            self.recording.monitor.observe_ready(True, metrics.at_s)

    def xid(self, event: XidEvent) -> None:
        """On the Timeline (once per journal entry) and through the alert rules."""
        if self.recording is not None:
            self.recording.feed.observe_xid(event)
            self.recording.monitor.observe_xid(event)

    def _listing_key(self) -> tuple[object, ...]:
        """What a new leftover or a gone one would change before a listing saw it."""
        last = self.console.last_gpu
        gpu = last if last and last.available else None
        holders = None if gpu is None else tuple(sorted({p.pid for p in gpu.processes()}))
        unit = self.console.unit_state
        return (holders, None if unit is None else (unit.active_state, unit.main_pid))

    def listing(self, listing: ProcListing) -> None:
        self._listed_key, self._listed_at_s = self._listing_key(), time.monotonic()
        if self.recording is not None:
            self.recording.feed.observe_listing(listing)
            self.recording.monitor.observe_leftovers(
                self.recording.feed.leftover_count(), listing.taken_at_s
            )

    def _record_files(self) -> None:
        if self.recording is not None:
            self.recording.poll_files()
            failure = self.recording.new_failure()
            if failure is not None:  # disk full, table dropped: rows are being lost
                self.console.notify(failure, title="Recorder", severity="error", timeout=30)

    @console_worker("record-procs", pane="record", what="list processes for the recorder")
    async def _record_procs(self) -> None:
        """Leftovers appear while nobody looks at Processes: list them now and then, quietly
        (every RECORD_PROCS_S when the GPU holders or the unit changed, else every
        RECORD_PROCS_STEADY_S)."""

        if (
            self._listed_at_s is not None
            and self._listing_key() == self._listed_key
            and time.monotonic() - self._listed_at_s < RECORD_PROCS_STEADY_S - RECORD_PROCS_S / 2
        ):
            return
        try:
            last = self.console.last_gpu
            snapshot = last if last and last.available else None
            listing = await list_gpu_processes(
                self.deck.host, snapshot, await deck_context(self.deck)
            )
        except ServedeckError:
            return  # the host's state is recorded by the other polls
        self.listing(listing)

    def _alert_changed(self, change: AlertChange) -> None:
        """On screen and the bell, unless acknowledged; the recorder and webhook have it already."""
        if change.state == "firing":
            self.console.notify(
                change.text,
                title="Alert",
                severity=_SEVERITY.get(change.rule.severity, "warning"),
                timeout=15,
            )
            if self.profile.alerting.bell:
                self.console.bell()
        else:
            self.console.notify(change.text, title="Alert resolved", timeout=8)

    # --- Timeline and replay -----------------------------------------------------------------
    def show_timeline(self) -> None:
        from tui.screens.timeline import TimelineScreen

        if isinstance(self.console.screen, TimelineScreen):
            return
        recording = self.recording
        if recording is None:
            return
        last = self.console.last_gpu
        gpu_count = last.gpu_count if last and last.available else 8
        self.console.push_screen(
            TimelineScreen(
                recording.db_path,
                status=recording.health(),
                gpu_count=gpu_count or 8,
                engine=recording.monitor.engine,
                open_replay=self.open_replay,
                persist_alert=recording.persist_alert_state,
            )
        )

    def show_alerts(self) -> None:
        """A: the alerts firing now, from the monitor (not only toasts and the Timeline)."""
        from tui.screens.alerts_firing import AlertsFiringScreen

        if isinstance(self.console.screen, AlertsFiringScreen):
            return
        recording = self.recording
        read = None if recording is None else recording.monitor.engine.firing_now
        why = "The alert monitor has not started yet: no rule has been evaluated."
        self.console.push_screen(AlertsFiringScreen(read, why))

    def open_replay(self, at_s: float) -> None:
        from tui.screens.replay import ReplayScreen

        if self.recording is not None:
            self.console.push_screen(
                ReplayScreen(self.recording.db_path, at_s, self.deck.host_label)
            )

    def replay_refuses(self, action: str) -> bool:
        """No action key works while a replay is on screen."""
        replay = sys.modules.get("tui.screens.replay")  # not loaded: no replay was opened
        return (
            action in ACTING
            and replay is not None
            and isinstance(self.console.screen, replay.ReplayScreen)
        )
