"""The recorder core: schema and migrations, the writer thread, the lock, retention, the feed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.record_support import count, wait_for
from tui.core.config import profile_from_data
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample, GpuStatic
from tui.logs.line import LogLine
from tui.procs.model import GpuMemoryShare, GpuProcess, ProcIdentity, ProcListing
from tui.record.feed import RecordFeed
from tui.record.lock import RecorderBusy
from tui.record.model import Event, MetricsRow, pack_gpu_samples, unpack_gpu_samples
from tui.record.query import RecordingReader
from tui.record.retention import RetentionPolicy, apply_retention
from tui.record.schema import MIGRATIONS, SCHEMA_VERSION, RecordingError, connect
from tui.record.writer import Recorder
from tui.serving.unit.service import UnitState

GIB = 1024**3


def _sample(index: int, used_gib: float = 10.0, **extra: object) -> GpuSample:
    return GpuSample(
        index=index,
        memory_used_bytes=int(used_gib * GIB),
        memory_total_bytes=96 * GIB,
        utilization_gpu_pct=50.0,
        temperature_c=61.0,
        power_w=350.5,
        sm_clock_mhz=1980,
        ecc_uncorrected_errors=0,
        **extra,  # type: ignore[arg-type]
    )


def _snapshot(ts: float, n: int = 8) -> GpuBoxSnapshot:
    statics = tuple(
        GpuStatic(i, "RTX PRO 6000", f"GPU-{i}", f"0000:{i:02x}:00.0", 96 * GIB) for i in range(n)
    )
    return GpuBoxSnapshot(
        "simulated", ts, statics=statics, samples=tuple(_sample(i) for i in range(n))
    )


def _unit(active: str, sub: str, pid: int | None, restarts: int = 0) -> UnitState:
    return UnitState(
        "vllm.service", "loaded", active, sub, "success", pid, None, None, None, restarts
    )


def test_gpu_blob_round_trip_keeps_values_and_unknowns() -> None:
    samples = (_sample(0, 95.5, pcie_tx_bytes_per_s=1.5e9), GpuSample(index=1, lost=True))
    back = unpack_gpu_samples(pack_gpu_samples(samples))
    assert back[0].memory_used_bytes == int(95.5 * GIB)
    assert back[0].memory_total_bytes == 96 * GIB
    assert back[0].temperature_c == 61.0 and back[0].sm_clock_mhz == 1980
    assert back[0].pcie_tx_bytes_per_s == pytest.approx(1.5e9, rel=1e-6)
    assert back[0].pcie_rx_bytes_per_s is None  # not reported stays not reported, never 0
    assert back[1].lost and back[1].memory_used_bytes is None
    assert unpack_gpu_samples(b"garbage") == ()


def test_gpu_blob_keeps_the_processes_on_each_gpu() -> None:
    procs = (
        GpuProcessUsage(4242, 0, 80 * GIB, "VLLM::Worker_TP0"),
        GpuProcessUsage(4243, 0, None, "python3"),
    )
    samples = (_sample(0, processes=procs), _sample(1))
    blob = pack_gpu_samples(samples)
    back = unpack_gpu_samples(blob)
    assert [
        (p.pid, p.gpu_index, p.used_memory_bytes, p.process_name) for p in back[0].processes
    ] == [
        (4242, 0, 80 * GIB, "VLLM::Worker_TP0"),
        (4243, 0, None, "python3"),
    ]
    assert back[1].processes == ()
    assert unpack_gpu_samples(blob[:-3]) == ()  # a torn blob is nothing, not an exception


def test_fresh_file_gets_the_current_schema_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    connection = connect(db, writer=True)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()


def test_old_schema_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "v1.sqlite"
    old = sqlite3.connect(db)
    old.executescript(MIGRATIONS[0] + "PRAGMA user_version = 1;")
    old.execute("INSERT INTO events (ts_ms, kind, source, text) VALUES (1000, 'log', 'x', 'kept')")
    old.commit()
    old.close()
    connection = connect(db, writer=True)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    connection.execute("INSERT INTO alert_state (alert_id, acked_at_s) VALUES ('a', 1.0)")
    assert connection.execute("SELECT text FROM events").fetchall() == [("kept",)]
    connection.close()


def test_newer_or_foreign_files_are_refused_in_one_line(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite"
    handle = sqlite3.connect(newer)
    handle.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    handle.close()
    with pytest.raises(RecordingError, match="newer than this servedeck"):
        connect(newer, writer=True)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(RecordingError, match=r"garbage\.sqlite"):
        connect(garbage, writer=True)
    with pytest.raises(RecordingError, match="no recording here"):
        RecordingReader(tmp_path / "missing.sqlite")


def test_writer_batches_at_most_one_commit_per_second(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    recorder = Recorder(db, host_label="box").start()
    started = time.monotonic()
    for i in range(60):  # 3 s of 20 Hz events
        recorder.add_event(Event(time.time(), "log", "test", f"line {i}", key=f"k{i}"))
        time.sleep(0.05)
    elapsed = time.monotonic() - started
    recorder.close()
    stats = recorder.stats()
    # the maintenance commit at start, one per second at most, the final flush
    assert stats.commits <= elapsed / 1.0 + 3
    assert stats.rows_written == 60 and stats.last_error is None
    assert count(db, "events") == 60


def test_gpu_ticks_metrics_and_state_at_read_back(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    t0 = 1_800_000_000.0
    with Recorder(db, host_label="box") as recorder:
        feed = RecordFeed(recorder, "box")
        for i in range(5):
            feed.observe_gpu(_snapshot(t0 + i))
        recorder.add_metrics(
            MetricsRow(t0 + 2, running_reqs=3, waiting_reqs=1, kv_cache_usage_pct=42.0)
        )
        feed.observe_unit(_unit("active", "running", 42), t0 + 1)
    with RecordingReader(db) as reader:
        state = reader.state_at(t0 + 3.5)
        assert state.gpu.available and state.gpu.taken_at_s == t0 + 3
        assert len(state.gpu.samples) == 8 and state.gpu.statics[0].name == "RTX PRO 6000"
        assert state.metrics is not None and state.metrics.running_reqs == 3
        assert state.unit is not None and state.unit["main_pid"] == 42
        before = reader.state_at(t0 - 100)
        assert not before.gpu.available and before.unit is None


def test_second_recorder_is_refused_and_names_the_holder(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    first = Recorder(db, what="servedeck record -p night").start()
    try:
        with pytest.raises(RecorderBusy) as caught:
            Recorder(db).start()
        message = str(caught.value)
        assert f"pid {os.getpid()}" in message and "servedeck record -p night" in message
    finally:
        first.close()
    Recorder(db).start().close()  # released: the next one may record


def test_lock_held_by_another_process_and_freed_by_its_death(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom tui.record.writer import Recorder\n"
        f"r = Recorder(Path({str(db)!r}), what='holder').start()\nprint('held', flush=True)\ntime.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(RecorderBusy, match=f"pid {child.pid} \\(holder\\)"):
            Recorder(db).start()
    finally:
        child.kill()
        child.wait()
    Recorder(db).start().close()  # kill -9 released the flock


def test_kill_9_mid_write_leaves_an_intact_file(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    beat = tmp_path / "enqueued"  # the child's last enqueued instant, whatever the machine's load
    code = (
        "import os, time\nfrom pathlib import Path\nfrom tui.record.writer import Recorder\n"
        "from tui.record.model import Event\nfrom tests.integration.test_record_core import _snapshot\n"
        f"r = Recorder(Path({str(db)!r})).start()\ni = 0\n"
        f"fd = os.open({str(beat)!r}, os.O_WRONLY | os.O_CREAT)\n"
        "while True:\n"
        "    now = time.time()\n"
        "    r.add_gpu(_snapshot(now))\n"
        "    for j in range(50):\n"
        "        r.add_event(Event(now, 'log', 'x', 'line %d' % i, key=str(i))); i += 1\n"
        "    os.pwrite(fd, b'%20.3f' % now, 0)\n"
        "    time.sleep(0.01)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parents[2])
    try:
        wait_for(lambda: count(db, "events") > 2000, timeout_s=60)
        time.sleep(1.3)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    last_enqueued = float(beat.read_text())
    connection = sqlite3.connect(db)
    assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    last = connection.execute("SELECT MAX(ts_ms) FROM events").fetchone()[0] / 1000
    connection.close()
    # One commit per second: at most the last second (plus scheduling slack) is lost.
    assert last_enqueued - last < 2.0
    with Recorder(db) as again:  # and recording simply continues in the same file
        again.add_event(Event(time.time(), "log", "x", "after the crash"))
    assert count(db, "events", "text = 'after the crash'") == 1


def test_retention_drops_old_days_and_thins_yesterday(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    now = 1_800_000_000.0
    connection = connect(db, writer=True)
    blob = pack_gpu_samples(_snapshot(now).samples)
    rows = [(int((now - age) * 1000), blob) for age in range(0, 120)]  # the last 2 minutes
    rows += [(int((now - 2 * 86400 - age) * 1000), blob) for age in range(0, 120)]  # 2 days ago
    rows += [(int((now - 8 * 86400 - age) * 1000), blob) for age in range(0, 120)]  # past retention
    connection.executemany("INSERT INTO gpu_ticks (ts_ms, data) VALUES (?, ?)", rows)
    connection.execute(
        "INSERT INTO events (ts_ms, kind, source, text) VALUES (?, 'log', 'x', 'old')",
        (int((now - 8 * 86400) * 1000),),
    )
    with connection:
        connection.execute("BEGIN")
        apply_retention(connection, now, RetentionPolicy(retention_days=7))
    recent = connection.execute(
        "SELECT COUNT(*) FROM gpu_ticks WHERE ts_ms > ?", (int((now - 3600) * 1000),)
    ).fetchone()[0]
    old = connection.execute(
        "SELECT COUNT(*), MIN(res_s) FROM gpu_ticks WHERE ts_ms < ?", (int((now - 86400) * 1000),)
    ).fetchone()
    assert recent == 120  # the last 24 h keep every second
    assert 12 <= old[0] <= 13 and old[1] == 10  # older days keep one tick per 10 s
    assert connection.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    connection.close()


class _ListSink:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ticks = 0

    def add_gpu(self, snapshot: GpuBoxSnapshot) -> None:
        self.ticks += 1

    def add_metrics(self, row: MetricsRow) -> None:
        pass

    def add_event(self, event: Event) -> None:
        self.events.append(event)


def _leftover(pid: int) -> GpuProcess:
    return GpuProcess(
        ProcIdentity("boot", pid, pid * 10),
        "leftover",
        "parent is init",
        1,
        "S",
        "ops",
        1000,
        0.0,
        "VLLM::Worker_TP1",
        "/system.slice/vllm.service",
        (GpuMemoryShare(1, 20 * GIB),),
    )


def test_feed_records_changes_not_repeats() -> None:
    sink = _ListSink()
    feed = RecordFeed(sink, "box", extra_secrets=("s3cr3t-value",))
    feed.observe_unit(_unit("active", "running", 7), 1.0)
    feed.observe_unit(_unit("active", "running", 7), 2.0)  # same: nothing new
    feed.observe_unit(None, 3.0, "ssh: connection lost")
    feed.observe_unit(None, 4.0, "ssh: connection lost")
    feed.observe_unit(_unit("failed", "failed", None, 1), 5.0)
    warning = LogLine(
        "WARNING 11-30 03:12:00 [x.py:1] token=s3cr3t-value leaked", 10.0, level="WARNING"
    )
    feed.observe_log(warning, 10.0)
    feed.observe_log(LogLine("INFO fine", 11.0), 11.0)  # below WARNING: not recorded
    listing = ProcListing("box", "boot", 20.0, (_leftover(99),))
    feed.observe_listing(listing)
    feed.observe_listing(listing)
    feed.observe_listing(ProcListing("box", "boot", 30.0, ()))
    texts = [event.text for event in sink.events]
    assert texts[0] == "vllm.service: active (running), pid 7"
    assert texts[1] == "unreachable: ssh: connection lost"
    assert texts[2] == "box reachable again"
    assert texts[3].startswith("vllm.service: failed (failed)") and "restarts 1" in texts[3]
    assert "s3cr3t-value" not in texts[4] and "[REDACTED]" in texts[4]
    assert texts[5].startswith("leftover appeared: pid 99") and sink.events[5].gpu == 1
    assert texts[6].startswith("leftover gone: pid 99")
    assert len(texts) == 7


def test_recorder_start_trims_what_is_past_retention(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    connection = connect(db, writer=True)
    old_ms = int((time.time() - 3 * 86400) * 1000)
    connection.execute(
        "INSERT INTO events (ts_ms, kind, source, text) VALUES (?, 'log', 'x', 'old')", (old_ms,)
    )
    connection.close()
    with Recorder(db, retention=RetentionPolicy(retention_days=2)):
        wait_for(lambda: count(db, "events") == 0, timeout_s=30)


def test_profile_record_table() -> None:
    profile, problems = profile_from_data(
        {"record": {"retention_days": 14, "enabled": False}}, "p", None
    )
    assert problems == [] and profile.record.retention_days == 14 and not profile.record.enabled
    _, problems = profile_from_data({"record": {"retention_days": 0}}, "p", None)
    assert problems == ["record.retention_days: expected a number from 1 to 366, got 0"]


def test_speculative_decoding_acceptance_is_recorded_and_absent_is_unknown(
    tmp_path: Path,
) -> None:
    db = tmp_path / "r.sqlite"
    t0 = 1_800_000_000.0
    with Recorder(db, host_label="box") as recorder:
        recorder.add_metrics(
            MetricsRow(t0, spec_acceptance_rate=0.62, spec_mean_accepted_length=2.9)
        )
        recorder.add_metrics(MetricsRow(t0 + 5, running_reqs=1))
    with RecordingReader(db) as reader:
        drafting = reader.state_at(t0 + 1).metrics
        assert drafting is not None and drafting.spec_acceptance_rate == 0.62
        assert drafting.spec_mean_accepted_length == 2.9
        plain = reader.state_at(t0 + 6).metrics
        assert plain is not None and plain.spec_acceptance_rate is None
