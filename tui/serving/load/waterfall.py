"""The after-ready waterfall as text: one bar per step on a shared time axis, gaps apart.

process start -> weights -> compile -> KV profile -> CUDA graphs -> API up -> first
answer, each step a bar starting where it started; the time the log does not explain
is drawn as a gap (░) beside the logged time (█), and each step says what it took in
this host's previous load of the model, so "weights 30 m 34 s (last load 1 m 58 s)"
shows where a slow load lost its time. A phase's figure is its span, the one the load
timeline and the deployment attempts show; vLLM's own figure for it, where it states
one, is named as vLLM's ("compile (vLLM: 3.1 s)"). Works on LoadExplain.as_json()'s
dicts, so the CLI renders what `status --json` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tui.core.formatting import duration_markdown

BAR_WIDTH = 18
NAME_WIDTH = 26  # a line stays within 80 columns with the "(last load ...)" note
GAP_MIN_S = 0.5  # less of a step unexplained is not worth a gap
EXEC_GAP = "process start -> first log line"  # the gap before the log's first line
ANSWER_GAP = "API up -> first answer"  # the gap after the API server's start
LOG_SPAN = "first log line to API up"  # the load timeline's total (the log's own times)
_SHORT = {
    EXEC_GAP: "exec -> first log line",
    "process start": "start (engine init)",
}


def span_said(step_names: Sequence[str]) -> str:
    """What a load's total measures, from its first and last steps: a handoff states the
    log's start-to-API-up and this span side by side, and each says which it is."""
    if not step_names:
        return ""
    origin = "process start" if step_names[0] == EXEC_GAP else "first log line"
    end = "first answer" if step_names[-1] == ANSWER_GAP else "API up"
    return f"{origin} to {end}"


def unlogged_s(wall_s: float, logged: bool, stated_s: float | None) -> float:
    """The part of a step the log does not explain: all of a gap, the rest of a phase
    beyond vLLM's own figure for it."""
    if not logged:
        return wall_s
    if stated_s is None or wall_s - stated_s < GAP_MIN_S:
        return 0.0
    return wall_s - stated_s


def _name(step: Mapping[str, Any]) -> str:
    name = str(step["name"])
    shown = _SHORT.get(name, name)
    stated = step.get("stated_s")
    if isinstance(stated, int | float):
        shown = f"{shown} (vLLM: {duration_markdown(float(stated))})"
    return shown[:NAME_WIDTH]


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
    gaps = 0.0
    for step in steps:
        start, wall = float(step["start_s"]), float(step["wall_s"])
        stated = step.get("stated_s")
        stated_s = float(stated) if isinstance(stated, int | float) else None
        unlogged = unlogged_s(wall, bool(step["logged"]), stated_s)
        gaps += unlogged
        offset = min(bar_width - 1, round(start * scale))
        length = max(1, min(bar_width - offset, round(wall * scale)))
        dark = 0 if not step["logged"] else length
        if step["logged"] and unlogged > 0 and length > 1:  # vLLM's part, then the rest
            dark = max(1, min(length - 1, round((wall - unlogged) * scale)))
        bar = (
            " " * offset + "█" * dark + "░" * (length - dark) + " " * (bar_width - offset - length)
        )
        kind = "" if step["logged"] else " gap"
        last = before.get(str(step["name"]))
        versus = f"  (last load {duration_markdown(last)})" if last is not None else ""
        shown = f"{_name(step):<{NAME_WIDTH}}|{bar}|{duration_markdown(wall):>8}"
        lines.append(f"{shown}{kind}{versus}")
    unexplained = duration_markdown(gaps)
    said = span_said([str(step["name"]) for step in steps])
    lines.append(f"total {duration_markdown(total)} ({said}), {unexplained} of it unlogged")
    if before:  # its own line: the total with its span and the comparison fit 80 columns
        lines.append(f"(last load {duration_markdown(sum(before.values()))} in total)")
    return lines
