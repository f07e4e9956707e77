"""The after-ready waterfall as text: one bar per step on a shared time axis, gaps apart.

process start -> weights -> compile -> KV profile -> CUDA graphs -> API up -> first
answer, each step a bar starting where it started; the time the log does not explain
is drawn as a gap (░) beside the logged time (█), and each step says what it took in
this host's previous load of the model, so "weights 1834 s (last load 118 s)" shows
where a slow load lost its time. Works on LoadExplain.as_json()'s dicts, so the CLI
renders what `status --json` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

BAR_WIDTH = 18
NAME_WIDTH = 26  # a line stays within 80 columns with the "(last load ...)" note
_SHORT = {
    "process start -> first log line": "exec -> first log line",
    "process start": "start (engine init)",
}


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def waterfall_lines(
    steps: Sequence[Mapping[str, Any]],
    earlier: Sequence[Sequence[Any]] = (),
    bar_width: int = BAR_WIDTH,
) -> list[str]:
    """One line per step, then the total; `earlier` is LoadExplain.earlier_steps_s."""
    if not steps:
        return []
    total = max(float(s["start_s"]) + float(s["wall_s"]) for s in steps)
    scale = bar_width / total if total > 0 else 0.0
    before = {str(name): float(wall) for name, wall in earlier}
    lines = []
    for step in steps:
        start, wall = float(step["start_s"]), float(step["wall_s"])
        offset = min(bar_width - 1, round(start * scale))
        length = max(1, min(bar_width - offset, round(wall * scale)))
        mark = "█" if step["logged"] else "░"
        bar = " " * offset + mark * length + " " * (bar_width - offset - length)
        name = str(step["name"])
        shown = _SHORT.get(name, name)
        kind = "" if step["logged"] else " gap"
        last = before.get(name)
        versus = f"  (last load {_seconds(last)})" if last is not None else ""
        lines.append(f"{shown[:NAME_WIDTH]:<{NAME_WIDTH}}|{bar}|{_seconds(wall):>6}{kind}{versus}")
    gaps = sum(float(s["wall_s"]) for s in steps if not s["logged"])
    last_total = sum(before.values()) if before else None
    versus = f"  (last load {_seconds(last_total)})" if last_total is not None else ""
    lines.append(f"total {_seconds(total)}{versus}, {_seconds(gaps)} of it unlogged")
    return lines
