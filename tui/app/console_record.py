"""The console's flight recorder: what the panes see goes to the recording; alerts; Timeline; replay.

Mixed into ServedeckApp. Each hook is a queue put or a comparison, so recording
costs the event loop almost nothing; SQLite runs in the recorder's own thread.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tui.app.console_workers import console_worker
from tui.app.parts import ConsoleParts
from tui.core.errors import ServedeckError
from tui.logs.line import LineBatch, warning_indices, warnings_or_worse
from tui.serving.load.tracker import Phase, vllm_line_times_s

if TYPE_CHECKING:  # the recorder (SQLite, alerts, webhook) loads after the first frame
    from tui.alerts.engine import AlertChange
    from tui.gpu.model import GpuBoxSnapshot
    from tui.logs.line import LogLine
    from tui.procs.model import ProcListing
    from tui.record.session import ConsoleRecording
    from tui.serving.load.live import LiveLoad
    from tui.serving.load.tracker import LoadProgress
    from tui.serving.metrics import ServerMetrics
    from tui.serving.readiness import Readiness
    from tui.serving.service import UnitState

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
_SEVERITY = {"critical": "error", "warning": "warning", "info": "information"}


def recording_wanted() -> bool:
    """`SERVEDECK_RECORD=0` opens the console without recording (measurements, old disks)."""
    return os.environ.get("SERVEDECK_RECORD", "1") not in ("0", "no", "off", "false")


class RecordMixin(ConsoleParts):
    """Needs the app's profile, deck, last_gpu, tracker; provides recording and the Timeline."""

    recording: ConsoleRecording | None = None
    _recorded_pid: int | None = None
    _log_started_s: float | None = None
    # What the last listing saw (listing_key) and when (monotonic), for the steady skip.
    _listed_key: object = None
    _listed_at_s: float | None = None

    def _start_recording(self: Any) -> None:
        from tui.record.session import ConsoleRecording

        secrets = tuple(s for s in (self.deck.api_key,) if s)
        self.recording = ConsoleRecording(
            self.profile,
            self.deck.host_label,
            notify=self._alert_changed,
            extra_secrets=secrets,
            enabled=recording_wanted(),
        )
        self.set_interval(RECORD_FILES_S, self._record_files, name="record-files")
        self.set_interval(RECORD_PROCS_S, self._record_procs, name="record-procs")

    def _stop_recording(self) -> None:
        if self.recording is not None:
            self.recording.close()

    # --- hooks the app calls ----------------------------------------------------------------
    def _record_gpu(self, snapshot: GpuBoxSnapshot) -> None:
        if self.recording is not None:
            self.recording.feed.observe_gpu(snapshot)
            self.recording.monitor.observe_gpu(snapshot)

    def _record_unit(self, state: UnitState | None, error: str | None) -> None:
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
    async def _record_exec(self: Any, pid: int, started_s: float) -> None:
        from tui.record.execinfo import read_exec

        found = await read_exec(self.deck.host, pid, self.recording.feed.extra_secrets)
        if found is not None and self.recording is not None:
            self.recording.feed.observe_exec(pid, found[0], found[1], started_s)

    def _record_lines(self, lines: Sequence[LogLine]) -> None:
        """New log lines only: the backlog the log pane shows at start is the past (a line
        with its own clock from before the console opened, or any line in the first seconds
        without one), and recording it again at every start would repeat it."""
        if self.recording is None:
            return
        now = time.time()
        if self._log_started_s is None:
            self._log_started_s = now
        settled = now - self._log_started_s > BACKLOG_S
        cutoff_s = self._log_started_s - BACKLOG_S
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
            kept = list(zip(lines.pick(i for i, _ in keep), (own for _, own in keep), strict=True))
        else:
            warnings = warnings_or_worse(lines)
            texts = [w.text for w in warnings]
            for line, own in zip(warnings, vllm_line_times_s(texts), strict=True):
                if line.cursor is None and (own is None and not settled):
                    continue
                if own is not None and own < cutoff_s:
                    continue
                kept.append((line, own))
        if kept:
            self.recording.feed.observe_logs(kept, now)  # redacted as one batch

    def _record_load_live(self, live: LiveLoad | None) -> None:
        if self.recording is not None:
            self.recording.feed.observe_load_live(live)

    def _record_progress(self, progress: LoadProgress) -> None:
        if self.recording is not None:
            stopped = progress.phase in (Phase.STOPPED, Phase.FAILED)
            if stopped and self.recording.feed.phase_seen not in (None, progress.phase):
                self.recording.monitor.observe_stopped(progress.at_s)
            self.recording.feed.observe_progress(progress)

    def _record_readiness(self, readiness: Readiness) -> None:
        if self.recording is not None:
            self.recording.feed.observe_readiness(readiness)
            if readiness.checked:
                self.recording.monitor.observe_ready(readiness.ready, readiness.at_s)

    def _record_metrics(self, metrics: ServerMetrics | None) -> None:
        if self.recording is None:
            return
        if metrics is not None:
            self.recording.feed.observe_metrics(metrics)
            self.recording.monitor.observe_metrics(metrics)
            self.recording.monitor.observe_ready(True, metrics.at_s)

    def _listing_key(self) -> tuple[object, ...]:
        """What a new leftover or a gone one would change before a listing saw it."""
        gpu = self.last_gpu if self.last_gpu and self.last_gpu.available else None
        holders = None if gpu is None else tuple(sorted({p.pid for p in gpu.processes()}))
        unit = self.unit_state
        return (holders, None if unit is None else (unit.active_state, unit.main_pid))

    def _record_listing(self, listing: ProcListing) -> None:
        self._listed_key, self._listed_at_s = self._listing_key(), time.monotonic()
        if self.recording is not None:
            self.recording.feed.observe_listing(listing)
            self.recording.monitor.observe_leftovers(
                self.recording.feed.leftover_count(), listing.taken_at_s
            )

    def _record_files(self: Any) -> None:
        if self.recording is not None:
            self.recording.poll_files()
            failure = self.recording.new_failure()
            if failure is not None:  # disk full, table dropped: rows are being lost
                self.notify(failure, title="Recorder", severity="error", timeout=30)

    @console_worker("record-procs", pane="record", what="list processes for the recorder")
    async def _record_procs(self: Any) -> None:
        """Leftovers appear while nobody looks at Processes: list them now and then, quietly
        (every RECORD_PROCS_S when the GPU holders or the unit changed, else every
        RECORD_PROCS_STEADY_S)."""
        from tui.procs import list_gpu_processes
        from tui.procs.gpu_hints import deck_context

        if (
            self._listed_at_s is not None
            and self._listing_key() == self._listed_key
            and time.monotonic() - self._listed_at_s < RECORD_PROCS_STEADY_S - RECORD_PROCS_S / 2
        ):
            return
        try:
            snapshot = self.last_gpu if self.last_gpu and self.last_gpu.available else None
            listing = await list_gpu_processes(
                self.deck.host, snapshot, await deck_context(self.deck)
            )
        except ServedeckError:
            return  # the host's state is recorded by the other polls
        self._record_listing(listing)

    def _alert_changed(self: Any, change: AlertChange) -> None:
        """On screen and the bell, unless acknowledged; the recorder and webhook have it already."""
        if change.state == "firing":
            self.notify(
                change.text,
                title="Alert",
                severity=_SEVERITY.get(change.rule.severity, "warning"),
                timeout=15,
            )
            if self.profile.alerting.bell:
                self.bell()
        else:
            self.notify(change.text, title="Alert resolved", timeout=8)

    # --- Timeline and replay -----------------------------------------------------------------
    def action_timeline(self: Any) -> None:
        from tui.screens.timeline import TimelineScreen

        if isinstance(self.screen, TimelineScreen):
            return
        recording = self.recording
        if recording is None:
            return
        gpu_count = self.last_gpu.gpu_count if self.last_gpu and self.last_gpu.available else 8
        self.push_screen(
            TimelineScreen(
                recording.db_path,
                status=recording.health(),
                gpu_count=gpu_count or 8,
                engine=recording.monitor.engine,
                open_replay=self.open_replay,
                persist_alert=recording.persist_alert_state,
            )
        )

    def action_alerts(self: Any) -> None:
        """A: the alerts firing now, from the monitor (not only toasts and the Timeline)."""
        from tui.screens.alerts_firing import AlertsFiringScreen

        if isinstance(self.screen, AlertsFiringScreen):
            return
        recording = self.recording
        read = None if recording is None else recording.monitor.engine.firing_now
        why = "The alert monitor has not started yet: no rule has been evaluated."
        self.push_screen(AlertsFiringScreen(read, why))

    def open_replay(self: Any, at_s: float) -> None:
        from tui.screens.replay import ReplayScreen

        if self.recording is not None:
            self.push_screen(ReplayScreen(self.recording.db_path, at_s, self.deck.host_label))

    def check_action(self: Any, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No action key works while a replay is on screen."""
        replay = sys.modules.get("tui.screens.replay")  # not loaded: no replay was opened
        if action in ACTING and replay is not None and isinstance(self.screen, replay.ReplayScreen):
            return False
        return super().check_action(action, parameters)
