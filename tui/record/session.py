"""The console's recording: a Recorder, its feed and the alert monitor, opened together.

When another recorder (`servedeck record`) already holds this host's file, the
console does not record a second copy: it reads the same file and says who writes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tui.alerts.engine import AlertChange, AlertEngine
from tui.alerts.monitor import AlertMonitor
from tui.bench.capacity.history import capacity_history_path
from tui.bench.history import history_path
from tui.bench.model import result_from_dict
from tui.core.config import Profile
from tui.core.paths import audit_log_path
from tui.record.feed import RecordFeed
from tui.record.headless import FileFollower, observe_capacity_records
from tui.record.lock import RecorderBusy
from tui.record.model import Event, MetricsRow
from tui.record.query import RecordingReader
from tui.record.retention import RetentionPolicy
from tui.record.schema import RecordingError
from tui.record.where import recording_path
from tui.record.writer import Recorder


def restore_mutes(db_path: Path, engine: AlertEngine) -> None:
    """Mutes set before (by a console or a recorder) still hold after a restart."""
    if not db_path.exists():
        return
    try:
        with RecordingReader(db_path) as reader:
            states = reader.alert_states()
    except RecordingError:
        return
    now = time.time()
    for alert_id, (muted_until, _acked) in states.items():
        if muted_until is not None and muted_until > now:
            engine.muted_until_s[alert_id] = muted_until


class _NoSink:
    """Where the feed writes when another process records this host."""

    def add_gpu(self, snapshot: object) -> None:
        pass

    def add_metrics(self, row: MetricsRow) -> None:
        pass

    def add_event(self, event: Event) -> None:
        pass


class ConsoleRecording:
    """Everything the console records; every method is cheap enough for the event loop."""

    def __init__(
        self,
        profile: Profile,
        host_label: str,
        *,
        notify: Callable[[AlertChange], None] | None = None,
        db_path: Path | None = None,
        extra_secrets: tuple[str, ...] = (),
        enabled: bool = True,
    ) -> None:
        self.db_path = db_path or recording_path(profile)
        self.host_label = host_label
        self.recorder: Recorder | None = None
        self.status = "recording off"
        self._said_failure: str | None = None
        sink: object = _NoSink()
        if enabled and profile.record.enabled:
            recorder = Recorder(
                self.db_path,
                host_label=host_label,
                retention=RetentionPolicy(retention_days=profile.record.retention_days),
                what=f"servedeck console -p {profile.name}",
            )
            try:
                recorder.start()
            except RecorderBusy as error:
                self.status = f"not recording here: {error}"
            except RecordingError as error:
                self.status = f"not recording: {error}"
            else:
                self.recorder = recorder
                sink = recorder
                self.status = f"recording to {self.db_path}"
        self.feed = RecordFeed(sink, host_label, extra_secrets=extra_secrets)  # type: ignore[arg-type]
        self.monitor = AlertMonitor(
            profile.alerting, host_label, feed=self.feed, notify=notify, extra_secrets=extra_secrets
        )
        restore_mutes(self.db_path, self.monitor.engine)
        self._audit = FileFollower(audit_log_path())
        self._bench = FileFollower(history_path(), result_from_dict)
        self._capacity = FileFollower(capacity_history_path())

    def persist_alert_state(self, alert_id: str) -> None:
        """Write one alert's mute/ack (only the recording's writer can)."""
        if self.recorder is None:
            return
        engine = self.monitor.engine
        acked = time.time() if alert_id in engine.acked else None
        self.recorder.set_alert_state(alert_id, engine.muted_until_s.get(alert_id), acked)

    @property
    def recording(self) -> bool:
        return self.recorder is not None

    def poll_files(self) -> None:
        """New audit records and benchmark runs since the last call (the console's own actions)."""
        for record in self._audit.new():
            self.feed.observe_audit(record)  # type: ignore[arg-type]
        for run in self._bench.new():
            if run.context.host == self.host_label:  # type: ignore[attr-defined]
                self.feed.observe_bench(run, time.time())
        observe_capacity_records(self.feed, self._capacity.new(), self.host_label)

    def health(self) -> str:
        if self.recorder is None:
            return self.status
        stats = self.recorder.stats()
        if stats.last_error:
            return f"recording failing: {stats.last_error}"
        lost = f"; {stats.failure_line()}" if stats.rows_failed else ""
        return f"{self.status} ({stats.rows_written} rows, {stats.commits} commits{lost})"

    def new_failure(self) -> str | None:
        """A write failure not said yet (`recording failing: FILE: disk full`), once per reason."""
        if self.recorder is None:
            return None
        failure = self.recorder.stats().failure
        if failure is None or failure == self._said_failure:
            return None
        self._said_failure = failure
        return f"recording failing: {failure}"

    def close(self) -> None:
        self.monitor.close()
        if self.recorder is not None:
            self.recorder.close()
