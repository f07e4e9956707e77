"""Capacity history: one `bench --capacity` result per line, next to the benchmark history.

Same append discipline as tui.bench.history (one write on O_APPEND; torn
lines skipped on read). Each record holds the answer, the SLO, every level and
the configuration it was measured on (model, engine version, TP/EP, GPUs,
config hash), so two searches can be compared later.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from tui.bench.history import append_record
from tui.core import paths


def capacity_history_path() -> Path:
    return paths.data_dir() / "capacity_history.jsonl"


def append_capacity(result: dict[str, Any], path: Path | None = None) -> Path:
    """Append one search (stamped with the local time); returns the file written."""
    stamped = {"saved_at": datetime.now().astimezone().isoformat(timespec="seconds"), **result}
    return append_record(stamped, path or capacity_history_path())


def read_capacity_history(path: Path | None = None) -> list[dict[str, Any]]:
    """Every complete search, oldest first; torn or foreign lines are skipped."""
    try:
        raw_lines = (path or capacity_history_path()).read_bytes().splitlines()
    except FileNotFoundError:
        return []
    records = []
    for raw in raw_lines:
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and "answer" in record and "levels" in record:
            records.append(record)
    return records


def searches_for_host(host_label: str, path: Path | None = None) -> list[dict[str, Any]]:
    """The searches run against one host (as its deck labels it), oldest first."""
    return [
        record
        for record in read_capacity_history(path)
        if (record.get("context") or {}).get("host") == host_label
    ]
