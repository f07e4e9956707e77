"""The recorder writes a run of events with one executemany (issue 18): the rows equal what
one execute per event wrote, in order, with gpu ticks, metrics and meta rows between them,
duplicate keys ignored as before, and each event's data encoded as json.dumps encodes it
(strings reused per commit; numbers, booleans and lists encoded each time)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tui.record.model import Event, MetricsRow
from tui.record.writer import Recorder, _write

EVENTS_COLUMNS = "ts_ms, kind, source, text, gpu, key, data"


def _events() -> list[Event]:
    out = []
    for i in range(300):
        data: dict[str, object] = {"level": ("WARNING", "ERROR")[i % 2]}
        if i % 7 == 0:
            data = {"n": 1} if i % 2 else {"n": True}  # equal values, other JSON
        elif i % 11 == 0:
            data = {"pids": [i, i + 1], "note": "x"}
        elif i % 13 == 0:
            data = {}
        key = f"log:{i % 250}"  # the last 50 repeat earlier keys: ignored
        out.append(Event(1.8e9 + i / 10, "log", "log", f"line {i}", None, key, data))
    return out


def _rows(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as connection:
        return connection.execute(f"SELECT {EVENTS_COLUMNS} FROM events ORDER BY rowid").fetchall()


def test_batched_events_equal_one_execute_each(tmp_path: Path) -> None:
    events = _events()
    batched = tmp_path / "batched.db"
    with Recorder(batched, commit_interval_s=0.05) as recorder:  # closing writes the rest
        for index, event in enumerate(events):
            recorder.add_event(event)
            if index % 40 == 0:  # other rows between runs of events
                recorder.add_metrics(MetricsRow(ts_s=1.8e9 + index))
    one_by_one = tmp_path / "one_by_one.db"
    with Recorder(one_by_one) as reference:
        pass  # the schema
    with sqlite3.connect(one_by_one) as connection:
        for event in events:
            _write(connection, ("event", event))
    rows = _rows(batched)
    assert rows == _rows(one_by_one)
    assert len(rows) == 250
    by_text = {row[3]: row[6] for row in rows}
    assert by_text["line 7"] == json.dumps({"n": 1})
    assert by_text["line 14"] == json.dumps({"n": True})
    assert by_text["line 11"] == json.dumps({"pids": [11, 12], "note": "x"})
    assert by_text["line 13"] is None
    assert by_text["line 1"] == json.dumps({"level": "ERROR"})
    assert reference.stats().last_error is None
