"""Which benchmark runs are measurements, which runs are alike, and the best of each kind.

Every consumer of "the best benchmark" (the Bench pane's comparison, the summary,
the exporter, the recorder and its Deployment attempts) asks this module, so a
cancelled empty run never reads as "best 0.0 tok/s" on one screen and as nothing
on another. A run counts as a measurement only when it finished every level and
some request completed; a prefill run (one output token) is judged by its prompt
tok/s, never by a "1-stream" decode figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tui.bench.model import BenchResult, LevelResult
from tui.core.redact import redact_text
from tui.source_health import one_line

# The fields of a run's context that say which deployment it measured.
CONFIG_FIELDS = ("model", "engine", "engine_version", "tp", "ep", "gpus", "config_hash", "host")
COMPLETE, PARTIAL, CANCELLED, EMPTY = "complete", "partial", "cancelled", "empty"
NO_EARLIER = "no earlier run of this workload on this configuration"


def level_label(level: LevelResult) -> str:
    return f"c={level.concurrency}" if level.request_rate is None else f"{level.request_rate:g}/s"


def is_prefill(run: BenchResult) -> bool:
    """One output token per request: the run measures prompt processing, not decode."""
    return run.output_tokens <= 1


def run_state(run: BenchResult) -> str:
    """complete, partial (cut short after some requests), cancelled or empty (nothing measured)."""
    measured = any(level.completed for level in run.levels)
    if run.partial or any(level.partial for level in run.levels):
        return PARTIAL if measured else CANCELLED
    return COMPLETE if measured else EMPTY


def workload_key(run: BenchResult) -> str:
    """Preset, endpoint, lengths and workload kind: what two alike runs sent."""
    kind = str(run.client.get("workload") or "random")
    return f"{run.preset} {run.endpoint} {run.input_tokens}/{run.output_tokens} {kind}"


def config_key(run: BenchResult) -> str:
    """The deployment a run measured (model, engine and its version, layout, GPUs, host)."""
    context = asdict(run.context)
    return "|".join(f"{name}={context[name]}" for name in CONFIG_FIELDS)


@dataclass(frozen=True, slots=True)
class BenchFigure:
    """One run reduced to its headline: what it measured, how, and whether it counts.

    `tok_s` is the best level's output tok/s, or for a prefill run its prompt tok/s
    per request; None when nothing was measured. It travels as a dict in the
    recorder's events, so Deployment attempts choose with the same function.
    """

    run_id: str
    started_at: str
    preset: str
    workload: str
    config: str
    state: str
    kind: str  # "decode" or "prefill"
    tok_s: float | None
    at: str
    single_stream_tok_s: float | None

    @property
    def counts(self) -> bool:
        return self.state == COMPLETE and self.tok_s is not None

    def describe(self) -> str:
        """`1,234.5 tok/s output at c=8` or `9,876 prompt tok/s (prefill)`; n/a when unmeasured."""
        if self.tok_s is None:
            return "n/a"
        where = f" at {self.at}" if self.at and self.at != "n/a" else ""
        if self.kind == "prefill":
            return f"{self.tok_s:,.0f} prompt tok/s (prefill{where})"
        return f"{self.tok_s:,.1f} tok/s output{where}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def figure_from_dict(data: Mapping[str, Any], partial: bool = False) -> BenchFigure | None:
    """A figure back from an event's data; None when it is not one.

    Events recorded before figures existed hold `best_output_tok_s` and no state: they
    read as complete unless `partial` (their text said so), and 0.0 as nothing measured.
    """
    try:
        legacy = "state" not in data
        tok_s = data["best_output_tok_s"] if legacy else data["tok_s"]
        if legacy and not tok_s:
            tok_s = None
        single = data.get("single_stream_tok_s")
        state = (PARTIAL if partial else COMPLETE) if legacy else str(data["state"])
        return BenchFigure(
            run_id=str(data.get("run_id", "")),
            started_at=str(data.get("started_at", "")),
            preset=str(data.get("preset", "")),
            workload=str(data.get("workload", data.get("preset", ""))),
            config=str(data.get("config", "")),
            state=state,
            kind=str(data.get("kind", "decode")),
            tok_s=float(tok_s) if isinstance(tok_s, int | float) else None,
            at=str(data.get("at", "")),
            single_stream_tok_s=float(single) if isinstance(single, int | float) else None,
        )
    except (KeyError, TypeError, ValueError):
        return None


def figure_of(run: BenchResult) -> BenchFigure:
    measured = [level for level in run.levels if level.completed]
    tok_s: float | None = None
    at = "n/a"
    if is_prefill(run):
        rated = [lv for lv in measured if lv.prefill_tok_s_per_request]
        best = max(rated, key=lambda lv: lv.prefill_tok_s_per_request or 0.0, default=None)
        if best is not None:
            tok_s, at = best.prefill_tok_s_per_request, level_label(best)
    else:
        best = max(measured, key=lambda lv: lv.output_throughput, default=None)
        if best is not None and best.output_throughput > 0:
            tok_s, at = best.output_throughput, level_label(best)
    return BenchFigure(
        run_id=run.run_id,
        started_at=run.started_at,
        preset=run.preset,
        workload=workload_key(run),
        config=config_key(run),
        state=run_state(run),
        kind="prefill" if is_prefill(run) else "decode",
        tok_s=tok_s,
        at=at,
        single_stream_tok_s=run.single_stream_tok_s,
    )


def best_figures(figures: Iterable[BenchFigure]) -> list[BenchFigure]:
    """THE best benchmark: per workload and configuration, the complete run with the highest
    figure; partial, cancelled and empty runs never count. Newest first."""
    best: dict[tuple[str, str], BenchFigure] = {}
    for figure in figures:
        if not figure.counts:
            continue
        key = (figure.workload, figure.config)
        held = best.get(key)
        if held is None or (figure.tok_s or 0.0) > (held.tok_s or 0.0):
            best[key] = figure
    return sorted(best.values(), key=lambda figure: figure.started_at, reverse=True)


def best_benchmarks(runs: Iterable[BenchResult]) -> list[BenchFigure]:
    """`best_figures` over history runs."""
    return best_figures(figure_of(run) for run in runs)


def same_config_as(figures: Iterable[BenchFigure], config: str) -> list[BenchFigure]:
    return [figure for figure in figures if figure.config == config]


def earlier_alike(runs: Sequence[BenchResult], newest: BenchResult) -> BenchResult | None:
    """The last complete run before `newest` of the same workload on the same configuration.

    `runs` is newest first (as `runs_for_host` returns them); None when there is none,
    which the caller says as NO_EARLIER rather than comparing unlike runs.
    """
    workload, config = workload_key(newest), config_key(newest)
    for run in runs:
        if run.run_id == newest.run_id or run.started_at > newest.started_at:
            continue
        if run_state(run) != COMPLETE:
            continue
        if workload_key(run) == workload and config_key(run) == config:
            return run
    return None


def result_toast(run: BenchResult) -> tuple[str, str, str]:
    """(title, text, severity) of the toast after a run with some completed request.

    A cancelled or cut-short run says so and is never "done"; a prefill run gives its
    prompt tok/s, a decode run its single-stream speed.
    """
    figure = figure_of(run)
    if figure.kind == "prefill":
        headline = figure.describe()
    elif figure.single_stream_tok_s:
        headline = f"1-stream {figure.single_stream_tok_s:,.1f} tok/s (output tok/s at c=1)"
    else:
        headline = figure.describe()
    failed = sum(level.failed for level in run.levels)
    errors = [error for level in run.levels for error in level.errors]
    first_error = f" ({redact_text(one_line(errors[0]))})" if errors else ""
    if figure.state != COMPLETE:
        finished = sum(1 for level in run.levels if not level.partial and level.completed)
        failures = f", {failed} failed request(s){first_error}" if failed else ""
        how = "cancelled" if run.partial else "cut short"
        text = (
            f"{run.preset}: {how} after {finished} finished level(s){failures}; "
            f"partial results kept, not counted as a measurement"
        )
        return "Benchmark incomplete", text, "warning"
    if failed:
        text = f"{run.preset}: finished with {failed} failed request(s){first_error}; {headline}"
        return "Benchmark incomplete", text, "warning"
    return "Benchmark", f"{run.preset}: {headline}", "information"
