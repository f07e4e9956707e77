"""Benchmark history: one BenchResult per line of a JSONL file in the data dir.

Appends are one `os.write` on an O_APPEND descriptor (as tui.core.audit does), so
a console and a CLI run never interleave; a truncated last line (a crash
mid-write) is skipped on read and the next append starts on a new line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tui.bench.model import BenchResult, result_from_dict
from tui.core import paths
from tui.core.redact import redact_data


def history_path() -> Path:
    return paths.data_dir() / "bench_history.jsonl"


def append_result(result: BenchResult, path: Path | None = None) -> Path:
    """Append one run; returns the file written."""
    return append_record(result.to_dict(), path or history_path())


def append_record(record: dict, target: Path) -> Path:
    """Append one JSON line to `target` in one write (shared by the capacity history)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(redact_data(record), sort_keys=True) + "\n").encode()
    descriptor = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            line = b"\n" + line  # a crash left a torn line: start a fresh one
        os.write(descriptor, line)
    finally:
        os.close(descriptor)
    return target


def read_history(path: Path | None = None) -> list[BenchResult]:
    """Every complete run, oldest first; torn or foreign lines are skipped."""
    target = path or history_path()
    try:
        raw_lines = target.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    results = []
    for raw in raw_lines:
        try:
            data = json.loads(raw)
            if isinstance(data, dict):
                results.append(result_from_dict(data))
        except (ValueError, TypeError, KeyError):
            continue
    return results


def runs_for_host(host: str, path: Path | None = None, limit: int = 8) -> list[BenchResult]:
    """The last `limit` runs of one host, newest first (the comparison table)."""
    runs = [result for result in read_history(path) if result.context.host == host]
    return list(reversed(runs))[:limit]
