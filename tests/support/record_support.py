"""Helpers for the flight-recorder tests: waiting on conditions, reading a recording raw."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from tui.gpu.model import GpuBoxSnapshot
from tui.record.model import Event, MetricsRow


def wait_for(
    condition: Callable[[], object], timeout_s: float = 30.0, step_s: float = 0.05
) -> object:
    """Poll until condition() is truthy (a loaded machine needs generous timeouts)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(step_s)


def count(db: Path, table: str, where: str = "1") -> int:
    """Rows in a table, read through a fresh connection (what another process would see)."""
    connection = sqlite3.connect(db)
    try:
        return int(connection.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        connection.close()


class ListSink:
    """A recorder sink that keeps the events in a list (the feed's rules, no SQLite)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add_gpu(self, snapshot: GpuBoxSnapshot) -> None:
        pass

    def add_metrics(self, row: MetricsRow) -> None:
        pass

    def add_event(self, event: Event) -> None:
        self.events.append(event)
