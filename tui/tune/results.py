"""A tune's results: ranked by the objective, the Pareto front, the winner's margin, resume.

The margin is judged with the measurement's own resolution: a capacity search brackets
its answer between the last level that met the SLO and the first that missed it, so a
winner whose capacity is inside the runner-up's bracket is "within the noise"; a tok/s
objective (single stream, per GPU) compares the 95 % intervals over the requests
(tui.bench.uncertainty): apart is beyond the noise, overlapping within it. The
results file (data dir, one JSON line per measured configuration) is keyed by the
configuration, the servedeck version, the model and the GPUs: `--resume` reuses only
what the same code measured on the same model and hardware.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

from tui import __version__
from tui.core import paths
from tui.tune.driver import Outcome
from tui.tune.table import fitted_rows, table_lines

RESULTS_FILE = "tune-results.jsonl"
OBJECTIVE_FIELDS = {
    "capacity": "capacity_users",
    "single_stream": "single_stream_tok_s",
    "tok_per_gpu": "tok_per_gpu",
}


def objective_value(outcome: Outcome, objective: str) -> float | None:
    value = getattr(outcome, OBJECTIVE_FIELDS[objective])
    return float(value) if isinstance(value, int | float) else None


def ranked(outcomes: Sequence[Outcome], objective: str) -> list[Outcome]:
    """Measured configurations best first; the unmeasured after them in their order."""
    measured = [o for o in outcomes if objective_value(o, objective) is not None]
    measured.sort(key=lambda o: -(objective_value(o, objective) or 0.0))
    return measured + [o for o in outcomes if o not in measured]


def pareto_front(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """Configurations no other beats on both per-user and total tok/s (at capacity); one
    without a proved capacity has no point and is left out, never placed at 0."""
    points = {
        id(o): (o.per_user_tok_s, o.total_tok_s)
        for o in outcomes
        if o.per_user_tok_s is not None and o.total_tok_s is not None
    }

    def beaten(mine: tuple[float, float]) -> bool:
        return any(p[0] >= mine[0] and p[1] >= mine[1] and p != mine for p in points.values())

    front = [o for o in outcomes if id(o) in points and not beaten(points[id(o)])]
    return sorted(front, key=lambda o: -points[id(o)][1])


def margin_line(outcomes: Sequence[Outcome], objective: str) -> str:
    """The best configuration, its margin over the next, and whether it is beyond the noise."""
    order = [o for o in ranked(outcomes, objective) if objective_value(o, objective) is not None]
    if not order:
        skipped = unranked_text(outcomes, objective)
        return (
            f"no configuration was ranked: {skipped}"
            if skipped
            else "no configuration was measured"
        )
    best = order[0]
    value = objective_value(best, objective) or 0.0
    if len(order) == 1:
        return f"best: {best.name} ({_value(value, objective)}); nothing else measured"
    runner = order[1]
    other = objective_value(runner, objective) or 0.0
    pct = 100.0 * (value - other) / other if other else float("inf")
    head = (
        f"best: {best.name} ({_value(value, objective)}), "
        f"+{pct:.0f}% over {runner.name} ({_value(other, objective)})"
    )
    if objective == "capacity" and runner.capacity_users_above is not None:
        beyond = value >= runner.capacity_users_above
        return head + (
            f": beyond the noise (the runner-up missed the SLO at {runner.capacity_users_above:g})"
            if beyond
            else f": within the noise (the runner-up's bracket reaches {runner.capacity_users_above:g})"
        )
    ranges = (_range(best, objective), _range(runner, objective))
    if objective != "capacity" and ranges[0] is not None and ranges[1] is not None:
        best_low, runner_high = ranges[0][0], ranges[1][1]
        return head + (
            f": beyond the noise (95 % intervals apart: {best_low:.1f} > {runner_high:.1f})"
            if best_low > runner_high
            else f": within the noise (95 % intervals overlap: {best_low:.1f} <= {runner_high:.1f})"
        )
    return head + ": noise unknown (one run each)"


def unranked(outcomes: Sequence[Outcome], objective: str) -> list[tuple[str, str]]:
    """Served configurations the ranking skips, each with why its figure is not known."""
    skipped = []
    for o in outcomes:
        if o.outcome != "served" or objective_value(o, objective) is not None:
            continue
        if objective == "tok_per_gpu" and o.gpus == 0:
            why = "no GPUs"
        elif objective != "single_stream" and o.capacity_none_proved:
            why = "capacity none proved"
        else:
            why = "not measured"
        skipped.append((o.name, why))
    return skipped


def unranked_text(outcomes: Sequence[Outcome], objective: str) -> str:
    """`seqs=2: capacity none proved (...); seqs=8: no GPUs`, empty when all were ranked."""
    return "; ".join(f"{name}: {why}" for name, why in unranked(outcomes, objective))


def _range(outcome: Outcome, objective: str) -> tuple[float, float] | None:
    """The objective's 95 % interval (tui.bench.uncertainty, via the capacity runner)."""
    pair = (
        outcome.single_stream_tok_s_range
        if objective == "single_stream"
        else outcome.tok_per_gpu_range
        if objective == "tok_per_gpu"
        else None
    )
    return (float(pair[0]), float(pair[1])) if pair else None


def _value(value: float, objective: str) -> str:
    return f"{value:.0f} users" if objective == "capacity" else f"{value:.1f} tok/s"


def table_rows(outcomes: Sequence[Outcome], objective: str) -> list[list[str]]:
    """Header and one row per configuration, ranked by the objective: every column."""
    return fitted_rows(ranked(outcomes, objective), objective, None)[0]


def result_lines(
    outcomes: Sequence[Outcome], objective: str, width: int | None = None
) -> list[str]:
    """The text the CLI prints: the table, the failures' lines, the front and the margin.

    `width` (None: every column) fits the table to a terminal; the lines under it wrap.
    """
    rows, short = fitted_rows(ranked(outcomes, objective), objective, width)
    notes = []
    for o in outcomes:
        if o.failure_line and o.outcome in ("failed", "timeout"):
            notes.append(f"{o.name}: {o.failure_line}")
        elif short and o.outcome == "skipped" and o.reason:
            notes.append(f"{o.name}: skipped: {o.reason}")
        if o.capacity_none_proved:
            notes.append(f"{o.name}: capacity none proved: {o.capacity_none_proved}")
    front = pareto_front(outcomes)
    if front:
        notes.append(
            "Pareto front (per-user vs total tok/s): "
            + "; ".join(f"{o.name} {o.per_user_tok_s:.1f}/{o.total_tok_s:.0f}" for o in front)
        )
    off_front = [o.name for o in outcomes if o.outcome == "served" and o.capacity_none_proved]
    if off_front:
        notes.append("not on the Pareto front (capacity none proved): " + ", ".join(off_front))
    notes.append(margin_line(outcomes, objective))
    skipped = unranked_text(outcomes, objective)
    if skipped and any(objective_value(o, objective) is not None for o in outcomes):
        notes.append(f"not ranked: {skipped}")
    if width is not None:
        notes = [
            part
            for note in notes
            for part in textwrap.wrap(note, width, subsequent_indent="  ", break_on_hyphens=False)
        ]
    return [*table_lines(rows), *notes]


def results_path() -> Path:
    return paths.data_dir() / RESULTS_FILE


def context_key(model: str, gpus: str) -> str:
    """Same code, same model, same hardware: what makes a measurement reusable."""
    return f"{__version__}|{model}|{gpus}"


def save_outcome(outcome: Outcome, context: str, path: Path | None = None) -> None:
    path = path or results_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"context": context, **outcome.as_json()}) + "\n")


def measured_before(context: str, path: Path | None = None) -> dict[str, Outcome]:
    """Served configurations measured in this context, by key (the last one wins)."""
    names = {f.name for f in fields(Outcome)}
    found: dict[str, Outcome] = {}
    try:
        lines = (path or results_path()).read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            data = json.loads(line)
            if data.get("context") != context or data.get("outcome") != "served":
                continue
            outcome = Outcome(**{k: v for k, v in data.items() if k in names})
        except (ValueError, TypeError, AttributeError):
            continue
        found[outcome.key] = outcome
    return found
