"""A finished capacity search as an answer with its uncertainty: the bracket and the spread.

One search proves a bracket: the highest level that met the SLO and the lowest above
it that missed; the true capacity lies between them. Repeat searches of the same
workload on the same configuration land at different answers (noise), so their
spread is shown beside the answer. The handoff summary, the Timeline and Deployment
attempts all say a search with `capacity_line`. Records are the `bench --capacity
--json` dicts of the capacity history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tui.bench.best import CONFIG_FIELDS


def is_finished(record: Mapping[str, Any]) -> bool:
    """A search that ran to its answer: not cancelled, with at least one level."""
    return not record.get("partial") and bool(record.get("levels"))


def _load(level: Mapping[str, Any]) -> float | None:
    rate = level.get("request_rate")
    if rate is not None:
        return float(rate)
    value = level.get("concurrency")
    return float(value) if isinstance(value, int | float) else None


def _unit(record: Mapping[str, Any]) -> str:
    return "requests/s" if record.get("by") == "rate" else "users"


def _count(value: float) -> str:
    return f"{value:g}"


def workload_key(record: Mapping[str, Any]) -> str:
    """Workload, lengths, search axis and SLO: what two alike searches asked."""
    workload = record.get("workload") or {}
    slo = record.get("slo") or {}
    parts = [
        str(workload.get(name)) for name in ("name", "endpoint", "input_tokens", "output_tokens")
    ]
    parts.append(str(record.get("by") or "concurrency"))
    parts += [f"{name}={slo[name]}" for name in sorted(slo)]
    return " ".join(parts)


def config_key(record: Mapping[str, Any]) -> str:
    """The deployment a search measured, with the same fields as a benchmark run's."""
    context = record.get("context") or {}
    return "|".join(f"{name}={context.get(name, '')}" for name in CONFIG_FIELDS)


def bracket(record: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """(highest level that met the SLO, lowest level above it that missed)."""
    loads = [(load, bool(lv.get("meets_slo"))) for lv in record.get("levels") or ()
             if (load := _load(lv)) is not None]  # fmt: skip
    low = max((load for load, met in loads if met), default=None)
    high = min(
        (load for load, met in loads if not met and (low is None or load > low)), default=None
    )
    return low, high


def bracket_text(record: Mapping[str, Any]) -> str:
    """`30-33 users (met at 30, missed at 33)`; the half-open cases in words."""
    low, high = bracket(record)
    unit = _unit(record)
    if low is None:
        return f"below {_count(high)} {unit} (missed at {_count(high)})" if high else "unknown"
    if high is None:
        return f"at least {_count(low)} {unit} (no level tried missed)"
    return f"{_count(low)}-{_count(high)} {unit} (met at {_count(low)}, missed at {_count(high)})"


def answer_load(record: Mapping[str, Any]) -> float | None:
    """The answer's load (users or requests/s); None when no level met the SLO."""
    low, _high = bracket(record)
    return low


def repeats(record: Mapping[str, Any], history: Iterable[Mapping[str, Any]]) -> list[float]:
    """The answers of every finished search of the same workload and configuration."""
    workload, config = workload_key(record), config_key(record)
    answers = []
    for other in history:
        if not is_finished(other):
            continue
        if workload_key(other) != workload or config_key(other) != config:
            continue
        load = answer_load(other)
        if load is not None:
            answers.append(load)
    return answers


def spread_text(record: Mapping[str, Any], history: Iterable[Mapping[str, Any]]) -> str:
    """`3 searches of this workload and configuration: 31-36 users`; empty for a first search."""
    answers = repeats(record, history)
    if len(answers) < 2:
        return ""
    low, high = min(answers), max(answers)
    span = _count(low) if low == high else f"{_count(low)}-{_count(high)}"
    return f"{len(answers)} searches of this workload and configuration: {span} {_unit(record)}"


def capacity_line(record: Mapping[str, Any], history: Iterable[Mapping[str, Any]] = ()) -> str:
    """The answer, the bracket it proved and, on repeat, the spread across searches."""
    answer = str(record.get("answer") or "capacity unknown")
    if not is_finished(record):
        return f"cancelled capacity search (not an answer): {answer}"
    text = f"{answer}; proved {bracket_text(record)}"
    spread = spread_text(record, history)
    return f"{text}; {spread}" if spread else text


def latest_finished(records: Iterable[Mapping[str, Any]], host: str) -> Mapping[str, Any] | None:
    """The newest finished search of one host (records oldest first, as the history reads)."""
    found = None
    for record in records:
        if is_finished(record) and (record.get("context") or {}).get("host") == host:
            found = record
    return found
