"""Keeping a recording inside its budget: drop days past retention, thin old GPU ticks.

GPU ticks older than `full_resolution_s` keep one tick per `downsample_step_s`
(the first of each step); events and the 5 s metrics are small and are kept whole
until retention drops them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    retention_days: float = 7.0
    full_resolution_s: float = DAY_S
    downsample_step_s: int = 10


def apply_retention(connection: sqlite3.Connection, now_s: float, policy: RetentionPolicy) -> int:
    """Delete what is past retention and downsample old ticks; returns the rows removed.

    Runs inside the caller's transaction (the writer thread's).
    """
    removed = 0
    cutoff_ms = int((now_s - policy.retention_days * DAY_S) * 1000)
    for table in ("gpu_ticks", "metrics", "events"):
        removed += connection.execute(f"DELETE FROM {table} WHERE ts_ms < ?", (cutoff_ms,)).rowcount
    old_ms = int((now_s - policy.full_resolution_s) * 1000)
    step_ms = policy.downsample_step_s * 1000
    removed += connection.execute(
        "DELETE FROM gpu_ticks WHERE ts_ms < :old AND res_s < :step AND ts_ms NOT IN ("
        " SELECT MIN(ts_ms) FROM gpu_ticks WHERE ts_ms < :old AND res_s < :step"
        " GROUP BY ts_ms / :step_ms)",
        {"old": old_ms, "step": policy.downsample_step_s, "step_ms": step_ms},
    ).rowcount
    connection.execute(
        "UPDATE gpu_ticks SET res_s = ? WHERE ts_ms < ? AND res_s < ?",
        (policy.downsample_step_s, old_ms, policy.downsample_step_s),
    )
    return removed
