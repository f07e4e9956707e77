"""The summary's "Last load" section: why the last load took as long as it did.

The console explains each load once it is ready and keeps it in this host's history
(tui.serving.load.history.record_load); the summary quotes the last one: its one-line
diagnosis, the prediction check, and the waterfall, so whoever takes over sees
where the minutes went without loading the model again.
"""

from __future__ import annotations

import itertools
from typing import Any

from tui.core.formatting import prediction_error
from tui.serving.load.waterfall import waterfall_lines


def _with_starts(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Steps kept before start_s was recorded: each starts where the last ended."""
    if all("start_s" in step for step in steps):
        return steps
    ends = itertools.accumulate(float(step.get("wall_s", 0.0)) for step in steps)
    return [{**step, "start_s": end - float(step.get("wall_s", 0.0))} for step, end in zip(steps, ends, strict=True)]  # fmt: skip


def last_load_lines(record: dict[str, Any] | None) -> list[str]:
    if not record or not record.get("diagnosis"):
        return []
    out = ["## Last load", "", f"- {record['diagnosis']}"]
    off_s = record.get("previous_prediction_error_s")
    if isinstance(off_s, (int, float)):
        out.append(f"- The prediction made at the load before was {prediction_error(off_s)}.")
    steps = [s for s in record.get("waterfall") or () if isinstance(s, dict)]
    try:
        lines = waterfall_lines(_with_starts(steps))
    except (KeyError, TypeError, ValueError):  # a hand-edited history line: no waterfall
        lines = []
    if lines:
        out += ["", "```", *lines, "```"]
    return [*out, ""]
