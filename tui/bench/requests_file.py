"""`servedeck bench --requests run.csv` (or `.jsonl`): one row per request of every level.

Written by the runner, which holds every request (its workers' too), as each level
ends, so a cancelled run keeps the levels it finished. Times are in ms, the send time
from the level's first send; a phase that was not measured is empty (CSV) or null.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tui.bench.metrics import output_tokens_of, tpot_of
from tui.bench.model import RequestOutcome

FORMATS = (".csv", ".jsonl")
COLUMNS = (
    "level", "concurrency", "request_rate", "request", "success", "sent_ms", "send_lag_ms",
    "connect_ms", "send_ms", "wait_ms", "ttft_ms", "ttst_ms", "e2el_ms", "tpot_ms",
    "prompt_tokens", "output_tokens", "model", "error",
)  # fmt: skip


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 3)


def request_rows(
    level: int, concurrency: int, rate: float | None, outcomes: Sequence[RequestOutcome]
) -> list[dict[str, Any]]:
    """The level's requests in send order, as rows of COLUMNS."""
    ordered = sorted(outcomes, key=lambda o: o.start_s)
    origin = ordered[0].start_s if ordered else 0.0
    rows = []
    for index, o in enumerate(ordered):
        ok = o.success
        rows.append({
            "level": level, "concurrency": concurrency, "request_rate": rate, "request": index,
            "success": ok, "sent_ms": _ms(o.start_s - origin),
            "send_lag_ms": _ms(o.start_s - o.scheduled_s) if o.scheduled_s > 0 else None,
            "connect_ms": _ms(o.connect_s), "send_ms": _ms(o.send_s), "wait_ms": _ms(o.wait_s),
            "ttft_ms": _ms(o.ttft_s) if ok else None,
            "ttst_ms": _ms(o.ttft_s + o.itl_s[0]) if ok and o.itl_s else None,
            "e2el_ms": _ms(o.latency_s) if ok else None,
            "tpot_ms": _ms(tpot_of(o)) if ok else None,
            "prompt_tokens": o.prompt_tokens, "output_tokens": output_tokens_of(o) if ok else None,
            "model": o.model, "error": o.error,
        })  # fmt: skip
    return rows


def append_requests(path: str, rows: Sequence[dict[str, Any]], *, first: bool) -> None:
    """Write (the first level) or append (the next ones) rows in the file's format."""
    target = Path(path)
    with target.open("w" if first else "a", newline="", encoding="utf-8") as handle:
        if target.suffix == ".jsonl":
            handle.writelines(json.dumps(row) + "\n" for row in rows)
            return
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        if first:
            writer.writeheader()
        writer.writerows(rows)
