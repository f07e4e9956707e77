"""The recorder: callers enqueue, one thread writes, at most one commit per second.

Enqueueing never blocks and never touches SQLite, so the console's event loop
pays only for a queue put; the thread batches everything that arrived into one
transaction. Retention and downsampling run in the same thread once an hour.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tui.gpu.model import GpuBoxSnapshot, GpuStatic
from tui.record.lock import RecordLock
from tui.record.model import METRICS_COLUMNS, Event, MetricsRow, pack_gpu_samples
from tui.record.retention import RetentionPolicy, apply_retention
from tui.record.schema import RecordingError, connect

COMMIT_INTERVAL_S = 1.0
MAINTENANCE_INTERVAL_S = 3600.0
_STOP = object()


@dataclass(frozen=True, slots=True)
class RecorderStats:
    """How the writer is doing, for the console's status line and the measurements."""

    rows_written: int
    commits: int
    queued: int
    last_error: str | None  # the latest commit's failure; None once one succeeds again
    rows_failed: int = 0  # rows that were never written (their commit failed)
    failure: str | None = None  # the latest failure of the run, kept after a later success

    def failure_line(self) -> str:
        """`3001 row(s) not written to FILE: database or disk is full`, or "" if none failed."""
        if not self.rows_failed:
            return ""
        return f"{self.rows_failed} row(s) not written: {self.failure}"


class Recorder:
    """Owns the lock and the only write connection of one recording."""

    def __init__(
        self,
        db_path: Path,
        *,
        host_label: str = "",
        retention: RetentionPolicy | None = None,
        commit_interval_s: float = COMMIT_INTERVAL_S,
        what: str = "",
    ) -> None:
        self.db_path = db_path
        self.host_label = host_label
        self.retention = retention or RetentionPolicy()
        self.commit_interval_s = commit_interval_s
        self._lock = RecordLock(db_path, what)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._rows = 0
        self._commits = 0
        self._last_error: str | None = None
        self._rows_failed = 0
        self._failure: str | None = None
        self._statics_json: str | None = None
        self._statics: tuple[GpuStatic, ...] = ()

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> Recorder:
        """Take the lock (RecorderBusy names the holder), open and migrate, start writing."""
        self._lock.acquire()
        try:
            connection = connect(self.db_path, writer=True)
        except Exception:
            self._lock.release()
            raise
        try:
            if self.host_label:
                with connection:
                    connection.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES ('host', ?)",
                        (self.host_label,),
                    )
        except sqlite3.Error as error:  # read-only, immutable, full: refused before it starts
            connection.close()
            self._lock.release()
            raise RecordingError(f"{self.db_path}: cannot write recording: {error}") from None
        self._thread = threading.Thread(
            target=self._run, args=(connection,), name="servedeck-recorder", daemon=True
        )
        self._thread.start()
        return self

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, then release the file and the lock."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout_s)
            self._thread = None
        self._lock.release()

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stats(self) -> RecorderStats:
        return RecorderStats(
            self._rows,
            self._commits,
            self._queue.qsize(),
            self._last_error,
            self._rows_failed,
            self._failure,
        )

    # --- what callers record -------------------------------------------------------------
    def add_gpu(self, snapshot: GpuBoxSnapshot) -> None:
        if not snapshot.available or not snapshot.samples:
            return
        # Packed and compressed by the writer thread: the samples are frozen, and the tick's
        # own thread is the console's event loop.
        self._queue.put(("gpu", _ms(snapshot.taken_at_s), snapshot.samples))
        if snapshot.statics and snapshot.statics != self._statics:  # the same ones every tick
            self._statics = snapshot.statics
            statics = json.dumps([_static_dict(static) for static in snapshot.statics])
            if statics != self._statics_json:
                self._statics_json = statics
                self._queue.put(("meta", "gpu_statics", statics))

    def add_metrics(self, row: MetricsRow) -> None:
        self._queue.put(("metrics", row))

    def add_event(self, event: Event) -> None:
        self._queue.put(("event", event))

    def set_alert_state(
        self, alert_id: str, muted_until_s: float | None, acked_at_s: float | None
    ) -> None:
        """Mute/ack of one alert, kept across restarts of the console and the recorder."""
        self._queue.put(("alert_state", alert_id, muted_until_s, acked_at_s))

    # --- the thread ----------------------------------------------------------------------
    def _run(self, connection: sqlite3.Connection) -> None:
        pending: list[object] = []
        last_commit = 0.0
        next_maintenance = 0.0  # at once: a recorder started after days away trims first
        stopping = False
        while not stopping:
            # Nothing pending: sleep until an item (or the stop) comes, or the maintenance.
            due_s = next_maintenance if not pending else last_commit + self.commit_interval_s
            wait_s = max(0.0, due_s - time.monotonic())
            try:
                item = self._queue.get(timeout=wait_s)
            except queue.Empty:
                item = None
            while item is not None:
                if item is _STOP:
                    stopping = True
                else:
                    pending.append(item)
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    item = None
            now = time.monotonic()
            maintenance = now >= next_maintenance
            if (pending and now - last_commit >= self.commit_interval_s) or stopping or maintenance:
                self._commit(connection, pending, maintenance)
                pending = []
                last_commit = now
                if maintenance:
                    next_maintenance = now + MAINTENANCE_INTERVAL_S
        connection.close()

    def _commit(
        self, connection: sqlite3.Connection, items: list[object], maintenance: bool
    ) -> None:
        try:
            with connection:
                connection.execute("BEGIN")
                _write_all(connection, items)
                if maintenance:
                    apply_retention(connection, time.time(), self.retention)
            if maintenance:
                connection.execute("PRAGMA incremental_vacuum")
            self._rows += len(items)
            self._commits += 1
            self._last_error = None
        except sqlite3.Error as error:
            # Disk full, table dropped: these rows are lost, counted and said (the console's
            # notice, `record`'s exit status); the next batch tries again.
            self._last_error = self._failure = f"{self.db_path}: {error}"
            self._rows_failed += len(items)


def _ms(ts_s: float) -> int:
    return round(ts_s * 1000)


def _static_dict(static: object) -> dict[str, object]:
    return {name: getattr(static, name) for name in static.__dataclass_fields__}  # type: ignore[attr-defined]


_INSERT_EVENT = (
    "INSERT OR IGNORE INTO events (ts_ms, kind, source, text, gpu, key, data) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _write_all(connection: sqlite3.Connection, items: list[object]) -> None:
    """Each item as _write writes it, in order; a run of events as one executemany (a log
    flood queues thousands a second: one statement call each held the interpreter, and
    each event's data, mostly `{"level": ...}`, was encoded anew)."""
    events: list[tuple[object, ...]] = []
    encoded: dict[tuple[tuple[str, str], ...], str] = {}
    for item in items:
        if item[0] == "event":  # type: ignore[index]
            events.append(_event_row(item[1], encoded))  # type: ignore[index]
            continue
        if events:
            connection.executemany(_INSERT_EVENT, events)
            events = []
        _write(connection, item)  # type: ignore[arg-type]
    if events:
        connection.executemany(_INSERT_EVENT, events)


def _event_row(event: Event, encoded: dict[tuple[tuple[str, str], ...], str]) -> tuple[object, ...]:
    """The events row of `event`; `encoded` keeps the JSON of string-only data seen in this
    commit (equal strings encode alike; 1, 1.0 and True are equal but encode differently)."""
    data = event.data
    if not data:
        text = None
    elif all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        key = tuple(data.items())
        text = encoded.get(key)
        if text is None:
            text = encoded[key] = json.dumps(data, default=str)
    else:
        text = json.dumps(data, default=str)
    return (_ms(event.ts_s), event.kind, event.source, event.text, event.gpu, event.key, text)


def _write(connection: sqlite3.Connection, item: tuple[object, ...]) -> None:
    kind = item[0]
    if kind == "gpu":
        ts_ms, samples = item[1:]
        try:
            blob = pack_gpu_samples(samples)  # type: ignore[arg-type]
        except (struct.error, ValueError, OverflowError):
            return  # a value the tick format cannot hold: that tick is not recorded
        connection.execute(
            "INSERT OR REPLACE INTO gpu_ticks (ts_ms, res_s, data) VALUES (?, 1, ?)", (ts_ms, blob)
        )
    elif kind == "metrics":
        row = item[1]
        assert isinstance(row, MetricsRow)
        values = [getattr(row, name) for name in METRICS_COLUMNS]
        connection.execute(
            f"INSERT OR REPLACE INTO metrics (ts_ms, {', '.join(METRICS_COLUMNS)}) "
            f"VALUES (?{', ?' * len(METRICS_COLUMNS)})",
            (_ms(row.ts_s), *values),
        )
    elif kind == "event":
        event = item[1]
        assert isinstance(event, Event)
        connection.execute(_INSERT_EVENT, _event_row(event, {}))
    elif kind == "alert_state":
        connection.execute(
            "INSERT OR REPLACE INTO alert_state (alert_id, muted_until_s, acked_at_s) VALUES (?, ?, ?)",
            item[1:],
        )
    elif kind == "meta":
        connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", item[1:])
