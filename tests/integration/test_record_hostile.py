"""Hostile recordings: a full disk, rows no servedeck wrote, dropped tables, a locked or
immutable file. Each ends as one line naming the file (or a count of skipped rows), never a
traceback and never a silent exit 0. Real SQLite files and real `servedeck` processes."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.snapshot_apps.timeline_app import TimelineApp
from tui.record.model import Event, MetricsRow
from tui.record.query import RecordingReader
from tui.record.schema import RecordingError
from tui.record.writer import Recorder
from tui.screens.timeline import TimelineScreen

SERVEDECK = [sys.executable, "-m", "tui"]
EVENTS = 6


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVEDECK, *args], capture_output=True, text=True, timeout=timeout, env=os.environ.copy()
    )


def _recording(path: Path, events: int = EVENTS) -> Path:
    """A recording written by the Recorder itself: `events` service events, a second apart."""
    with Recorder(path, host_label="box") as recorder:
        start = time.time() - events
        for i in range(events):
            recorder.add_event(Event(start + i, "service", "unit", f"event {i}"))
    return path


def _damage(path: Path, *sql: str) -> None:
    connection = sqlite3.connect(path)
    try:
        for statement in sql:
            connection.execute(statement)
        connection.commit()
    finally:
        connection.close()


def _one_line_error(result: subprocess.CompletedProcess[str], path: Path) -> str:
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("servedeck: error:")]
    assert len(errors) == 1 and str(path) in errors[0], result.stderr
    return errors[0]


# --- bad rows: skipped and counted ----------------------------------------------------------
BAD_ROWS = (
    "UPDATE events SET data = '{not json' WHERE text = 'event 1'",
    "UPDATE events SET ts_ms = 'yesterday' WHERE text = 'event 3'",
)


@pytest.mark.parametrize("as_json", [False, True])
def test_timeline_skips_and_counts_bad_rows(tmp_path: Path, as_json: bool) -> None:
    """Failed before: a traceback (JSONDecodeError, then TypeError on 'yesterday' / 1000)."""
    db = _recording(tmp_path / "night.sqlite")
    _damage(db, *BAD_ROWS)
    result = _run("timeline", "--db", str(db), *(["--json"] if as_json else []))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stdout.splitlines()) == EVENTS - 2
    assert "event 1" not in result.stdout and "event 3" not in result.stdout
    assert f"2 bad row(s) skipped in {db}" in result.stderr


def test_summary_history_reads_past_bad_rows(tmp_path: Path) -> None:
    """The summary's recorded section reads the same rows (failed before: JSONDecodeError)."""
    db = _recording(tmp_path / "night.sqlite")
    _damage(db, *BAD_ROWS)
    with RecordingReader(db) as reader:
        events = reader.events(time.time() - 3600, time.time() + 1)
        state = reader.state_at(time.time())
        assert reader.span() is not None
    assert [event.text for event in events] == [f"event {i}" for i in (0, 2, 4, 5)]
    assert state.unit_text is None or state.unit_text.startswith("event")
    assert reader.bad_rows >= 2


async def test_timeline_screen_says_bad_rows_skipped(tmp_path: Path) -> None:
    """Failed before: the read's worker failed and the screen said "0 event(s)" alone."""
    db = _recording(tmp_path / "night.sqlite")
    _damage(db, *BAD_ROWS)
    app = TimelineApp(db)
    async with app.run_test(size=(120, 30)) as pilot:
        deadline = time.monotonic() + 30
        while not (isinstance(app.screen, TimelineScreen) and app.screen.events):
            assert time.monotonic() < deadline, "the Timeline never read the file"
            await pilot.pause(0.1)
        screen = app.screen
        assert len(screen.events) == EVENTS - 2
        status = str(screen.query_one("#timeline-status").content)
        assert "4 event(s)" in status and "2 bad row(s) skipped" in status, status


# Values SQLite can hold in any column of a row (its type affinity is advice, not a rule).
_VALUES = st.one_of(
    st.none(),
    st.booleans().map(int),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.sampled_from(["{}", "[]", "null", "1", '{"a": 1}', '"x"', "{" * 2000, "yesterday"]),
)
_COLUMNS = ("ts_ms", "kind", "source", "text", "gpu", "key", "data")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(damage=st.lists(st.tuples(st.sampled_from(_COLUMNS), _VALUES), min_size=1, max_size=6))
def test_any_row_value_is_read_or_skipped(
    tmp_path_factory: pytest.TempPathFactory, damage: list[tuple[str, object]]
) -> None:
    """Whatever a row holds, a read returns the good rows and counts the rest; the
    seek, span and state-at reads never raise (failed before: TypeError, ValueError)."""
    db = tmp_path_factory.mktemp("rows") / "night.sqlite"
    _recording(db, events=3)
    connection = sqlite3.connect(db)
    try:
        for row, (column, value) in enumerate(damage, start=1):
            with contextlib.suppress(sqlite3.IntegrityError):  # NOT NULL, UNIQUE key
                connection.execute(
                    f"UPDATE events SET {column} = ? WHERE id = ?", (value, (row % 3) + 1)
                )
        connection.commit()
    finally:
        connection.close()
    with RecordingReader(db) as reader:
        events = reader.events()
        assert len(events) + reader.bad_rows == 3
        for event in events:
            assert isinstance(event.data, dict) and isinstance(event.text, str)
            time.localtime(event.ts_s)  # every event read can be shown
        reader.span()
        reader.state_at(time.time())
        reader.neighbour_event(0, forward=True)
        reader.neighbour_event(time.time() + 10, forward=False)


# --- a damaged or unwritable file: one line naming it ----------------------------------------
def test_dropped_events_table_is_one_line(tmp_path: Path) -> None:
    db = _recording(tmp_path / "night.sqlite")
    _damage(db, "DROP TABLE events")
    for args in (("timeline",), ("timeline", "--json")):
        line = _one_line_error(_run(*args, "--db", str(db)), db)
        assert "table 'events' is missing" in line
    # failed before: recorded nothing and exited 0
    line = _one_line_error(_run("record", "--demo", "--seconds", "1", "--db", str(db)), db)
    assert "table 'events' is missing" in line


def test_dropped_meta_table_refuses_recording(tmp_path: Path) -> None:
    """Failed before: a traceback (no such table: meta) from `record`."""
    db = _recording(tmp_path / "night.sqlite")
    _damage(db, "DROP TABLE meta")
    line = _one_line_error(_run("record", "--demo", "--seconds", "1", "--db", str(db)), db)
    assert "table 'meta' is missing" in line
    assert _run("timeline", "--db", str(db)).returncode == 0  # still readable


def test_locked_recording_is_one_line(tmp_path: Path) -> None:
    db = _recording(tmp_path / "night.sqlite")
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO meta (key, value) VALUES ('held', '1')")
        assert "locked" in _one_line_error(_run("timeline", "--db", str(db)), db)
        assert "locked" in _one_line_error(
            _run("record", "--demo", "--seconds", "1", "--db", str(db)), db
        )
    finally:
        holder.close()


@contextlib.contextmanager
def _immutable(path: Path) -> Iterator[None]:
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("chattr +i needs root")  # not a real part this machine lacks
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr +i not supported here: {done.stderr!r}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_immutable_recording_refuses_writing_reads_fine(tmp_path: Path) -> None:
    """Failed before: a traceback (attempt to write a readonly database) from `record`."""
    db = _recording(tmp_path / "night.sqlite")
    with _immutable(db):
        _one_line_error(_run("record", "--demo", "--seconds", "1", "--db", str(db)), db)
        assert _run("timeline", "--db", str(db)).returncode == 0


def test_read_only_recording_refuses_writing(tmp_path: Path) -> None:
    """A 0444 file for a user who is not root (root writes anyway: the Recorder is asked
    directly, as that user would meet it, only when not root)."""
    db = _recording(tmp_path / "night.sqlite")
    db.chmod(0o444)
    if os.geteuid() == 0:
        pytest.skip("root writes a 0444 file; the immutable test covers a file nobody may write")
    with pytest.raises(RecordingError, match=str(db)):
        Recorder(db, host_label="box").start()


# --- a full disk -------------------------------------------------------------------------
@contextlib.contextmanager
def _small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr!r}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_full_disk_makes_record_fail_with_one_line(tmp_path: Path) -> None:
    """Failed before: the rows that did not fit were dropped and `record` exited 0."""
    with _small_tmpfs(tmp_path / "small", "160k") as folder:
        db = folder / "night.sqlite"
        result = _run("record", "--demo", "--seconds", "10", "--db", str(db))
        line = _one_line_error(result, db)
        assert "row(s) not written" in line and "full" in line, result.stderr
        assert f"recording failing: {db}: database or disk is full" in result.stderr


def test_recording_files_are_private(tmp_path: Path) -> None:
    """Failed before: night.sqlite, -wal and -shm were 0644 (the umask's)."""
    old = os.umask(0o022)
    try:
        db = tmp_path / "night.sqlite"
        with Recorder(db, host_label="box") as recorder:
            recorder.add_event(Event(time.time(), "service", "unit", "one"))
            deadline = time.monotonic() + 10
            while recorder.stats().commits == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
            modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in files}
        assert modes == dict.fromkeys(modes, 0o600), modes
    finally:
        os.umask(old)


def test_console_recording_says_a_write_failure_once(tmp_path: Path) -> None:
    """The console's recording notices rows lost (here: the events table dropped under it)
    and says it once per reason; its health line keeps the count after a good commit.
    Failed before: the next (empty) commit cleared the error and nothing was said."""
    from tui.core.config import demo_profile
    from tui.record.session import ConsoleRecording

    db = _recording(tmp_path / "night.sqlite")
    recording = ConsoleRecording(demo_profile(), "simulator", db_path=db)
    try:
        assert recording.recording and recording.new_failure() is None
        _damage(db, "DROP TABLE events")
        recording.feed.event(Event(time.time(), "service", "unit", "lost"))
        deadline = time.monotonic() + 15
        while (failure := recording.new_failure()) is None:
            assert time.monotonic() < deadline, recording.health()
            time.sleep(0.05)
        assert failure == f"recording failing: {db}: no such table: events"
        assert recording.new_failure() is None  # said once
        # The first failure may be the start's maintenance (retention on the dropped table,
        # no rows): the metrics row must come after the event's failed commit, not with it.
        while recording.recorder.stats().rows_failed < 1:  # type: ignore[union-attr]
            assert time.monotonic() < deadline, recording.health()
            time.sleep(0.05)
        assert recording.new_failure() is None  # the event's failure: the same reason
        recording.recorder.add_metrics(MetricsRow(time.time()))  # type: ignore[union-attr]
        deadline = time.monotonic() + 15
        while recording.recorder.stats().last_error is not None:  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert "1 row(s) not written" in recording.health()
    finally:
        recording.close()
