"""The recording's events for what the console's files tell: an audited action, a
benchmark run, a capacity search.

Pure: each takes a record as its file holds it and returns the Event (keyed by a digest of
what makes it unique, so a record read twice is recorded once); RecordFeed redacts and
records it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tui.bench.best import COMPLETE, figure_of
from tui.bench.capacity.answer import bracket, capacity_line, config_key, is_finished
from tui.bench.capacity.answer import workload_key as capacity_workload
from tui.record.model import Event

_AUDIT_FIELDS = (
    "verb", "unit", "action", "preset", "outcome", "ok", "message", "reason", "error",
    "verdict", "summary",
)  # fmt: skip


def digest(*parts: object) -> str:
    """An event's key from what makes it unique."""
    return hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=10).hexdigest()


def audit_event(record: Mapping[str, Any], redact: Callable[[str], str]) -> Event:
    """An audit log record as an action event: who did what, with its details."""
    event = str(record.get("event", "?"))
    detail = ", ".join(
        f"{name}={record[name]}" for name in _AUDIT_FIELDS if record.get(name) not in (None, "")
    )
    targets = record.get("targets")
    if isinstance(targets, list) and targets:
        pids = ",".join(str(t.get("pid")) for t in targets if isinstance(t, Mapping))
        detail += f"{', ' if detail else ''}pids {pids}"
    ts = float(record.get("ts") or 0.0)
    key = f"audit:{digest(ts, event, record.get('console_pid'), detail)}"
    said = f": {redact(detail)}" if detail else ""  # never an empty reason after ':'
    text = f"{event} by {record.get('operator', '?')}{said}"
    return Event(ts, "action", "audit", text, key=key, data={"event": event})


def bench_event(run: Any, ts_s: float) -> Event:
    """A benchmark run with its headline figure (tui.bench.best), marked when it does not count."""
    figure = figure_of(run)
    single = figure.single_stream_tok_s
    single_text = f", {single:.1f} tok/s single stream" if single else ""
    state = "" if figure.state == COMPLETE else f" ({figure.state}: not a measurement)"
    text = f"benchmark {run.preset}: {figure.describe()}{single_text}{state}"
    return Event(ts_s, "action", "bench", text, key=f"bench:{run.run_id}", data=figure.to_dict())


def capacity_event(
    record: Mapping[str, Any], ts_s: float, history: Sequence[Any], redact: Callable[[str], str]
) -> Event:
    """A capacity search: its answer with the bracket it proved, its SLO and its levels."""
    low, high = bracket(record)
    levels = [
        {
            "concurrency": level.get("concurrency"),
            "request_rate": level.get("request_rate"),
            "meets_slo": bool(level.get("meets_slo")),
            "limited_by": level.get("limited_by", ""),
            "output_throughput": level.get("output_throughput"),
        }
        for level in record.get("levels") or ()
    ]
    data = {
        "answer": record.get("answer", ""),
        "line": capacity_line(record, history),
        "finished": is_finished(record),
        "met": low,
        "missed": high,
        "by": record.get("by") or "concurrency",
        "slo": record.get("slo") or {},
        "levels": levels,
        "workload": capacity_workload(record),
        "config": config_key(record),
    }
    key = f"capacity:{digest(record.get('saved_at'), record.get('answer'), len(levels))}"
    text = f"capacity search: {redact(data['line'])}"
    return Event(ts_s, "action", "capacity", text, key=key, data=data)
