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
from tui.bench.uncertainty import UNDECIDED

# What each failure kind of a level is called (tui.bench.capacity.search.level_failures).
FAILURE_LABELS = {
    "ttft": "TTFT",
    "itl": "ITL",
    "user_tok_s": "per-user speed",
    "errors": "errors",
    "preemptions": "preemptions (KV cache full)",
    "queue": "a growing queue",
}


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
    """(highest level that met the SLO, lowest level above it that missed).

    A client-bound level neither met nor missed (the client's limit, not the server's).
    """
    loads = [(load, bool(lv.get("meets_slo"))) for lv in record.get("levels") or ()
             if (load := _load(lv)) is not None
             and (lv.get("meets_slo") or not lv.get("client_bound"))]  # fmt: skip
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


# A level's figure for each objective: (label, level field, SLO field, unit, higher is worse).
_OBJECTIVES = {
    "ttft": ("TTFT p99", "ttft_p99_ms", "ttft_p99_ms", "ms", True),
    "itl": ("ITL p99", "itl_p99_ms", "itl_p99_ms", "ms", True),
    "user_tok_s": ("per-user speed", "per_user_tok_s", "min_user_tok_s", "tok/s", False),
}


def _figures(level: Mapping[str, Any], slo: Mapping[str, Any], names: Iterable[str]) -> str:
    """`ITL p99 108 ms > 100 ms`: each named objective's figure beside its limit."""
    said = []
    for name in names:
        if name not in _OBJECTIVES:
            said.append(FAILURE_LABELS.get(name, str(name)))  # errors, preemptions, queue
            continue
        label, field, limit_field, unit, higher_worse = _OBJECTIVES[name]
        value, limit = level.get(field), slo.get(limit_field)
        if not isinstance(value, int | float) or not isinstance(limit, int | float):
            continue
        bad = value > limit if higher_worse else value < limit
        sign = (">" if bad else "<=") if higher_worse else ("<" if bad else ">=")
        said.append(f"{label} {value:,.{0 if unit == 'ms' else 1}f} {unit} {sign} {limit:g} {unit}")
    return ", ".join(said)


def _level_words(level: Mapping[str, Any]) -> str:
    """`1 user`, `4 users`, `0.5 requests/s`: a level's load as its record gives it."""
    rate = level.get("request_rate")
    if rate is not None:
        return f"{_count(float(rate))} requests/s"
    users = level.get("concurrency")
    return "1 user" if users == 1 else f"{users} users"


def none_proved(record: Mapping[str, Any]) -> str | None:
    """Why a search that measured levels proved no capacity, naming the level that decided;
    None when a level met the SLO, or when none was measured (unknown, not disproved).

    With the SLO off a level still fails when its client could not keep up (client-bound),
    its requests failed, or it ended before a measured request finished (partial).
    """
    levels = [lv for lv in record.get("levels") or () if _load(lv) is not None]
    if not levels or any(lv.get("meets_slo") for lv in levels):
        return None
    lowest = min(levels, key=lambda lv: _load(lv) or 0.0)  # every one has a load (above)
    level = next((lv for lv in levels if lv.get("client_bound")), lowest)
    slo = record.get("slo") or {}
    failures = list(level.get("failures") or ())
    if level.get("client_bound"):
        why = f"the client could not keep up ({level['client_bound']})"
    elif failures:
        said = _figures(level, slo, [kind for kind in failures if kind != "errors"])
        if "errors" in failures:
            failed, done = level["failed"], level["completed"]
            said = ", ".join(filter(None, [f"errors ({failed} of {failed + done} failed)", said]))
        why = f"missed {said}"
    elif level.get("partial"):
        why = "partial: it ended before a measured request finished"
    elif level.get("verdict") == UNDECIDED and level.get("undecided"):
        what = ", ".join(FAILURE_LABELS.get(k, k) for k in level.get("undecided") or ())
        why = f"{UNDECIDED} ({what})"
    else:
        why = "no request completed"
    off = ", with the SLO off" if not any(v is not None for v in slo.values()) else ""
    return f"at {_level_words(level)}, {why}{off}"


def truth_text(record: Mapping[str, Any]) -> str:
    """The simulator's truth beside what the search proved; empty without a truth.

    The truth is the simulator's scheduler replayed without noise (tui.sim.capacity);
    each level of the search is one measurement on this machine, whose timing noise (a
    stalled client or server) the model leaves out. So the truth can lie outside the
    bracket: then the level that decided otherwise is named with its figures.
    """
    truth = (record.get("truth") or {}).get("concurrency")
    if not isinstance(truth, int):
        return ""
    said = f"simulator truth: {truth} {'user' if truth == 1 else 'users'}"
    low, high = bracket(record)
    if low is None and high is None:
        return said
    levels = {_load(level): level for level in record.get("levels") or ()}
    slo = record.get("slo") or {}
    proved = bracket_text(record).split(" (")[0]
    if high is not None and truth >= high:
        level, verb = levels[high], f"the miss at {_count(high)}"
        figures = _figures(level, slo, level.get("failures") or ())
    elif low is not None and truth < low:
        level, verb = levels[low], f"the pass at {_count(low)}"
        figures = _figures(level, slo, (record.get("truth") or {}).get("limited_by") or ())
    else:
        return f"{said}, inside the proved {proved}"
    because = f" ({figures})" if figures else ""
    return (
        f"{said}, outside the proved {proved}: {verb}{because} was one measurement with "
        "this machine's timing noise, which the simulator's model leaves out"
    )


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
    """The answer, the bracket it proved, on repeat the spread across searches, and the
    simulator's truth where there is one (said against the bracket)."""
    answer = str(record.get("answer") or "capacity unknown")
    if not is_finished(record):
        return f"cancelled capacity search (not an answer): {answer}"
    if record.get("none_proved") and bracket(record) == (None, None):
        return answer  # the answer says why nothing was proved; there is no bracket
    parts = [f"{answer}; proved {bracket_text(record)}", spread_text(record, history)]
    return "; ".join(part for part in (*parts, truth_text(record)) if part)


def latest_finished(records: Iterable[Mapping[str, Any]], host: str) -> Mapping[str, Any] | None:
    """The newest finished search of one host (records oldest first, as the history reads)."""
    found = None
    for record in records:
        if is_finished(record) and (record.get("context") or {}).get("host") == host:
            found = record
    return found
