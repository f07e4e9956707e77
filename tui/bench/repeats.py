"""`bench --repeat N`: the whole workload run N times, each figure's spread across runs.

Why: one run's intervals cover its own requests only; the server's speed moving
between runs (tests/perf/results/bench_interval_coverage.txt: runs spread 1.6-3.9x
what one run's interval implies) shows only across runs. Each figure of each level
gets the runs' min, median and max and a 95 % interval of its mean across runs
(Student's t). `--settle PCT` stops early once the last SETTLE_RUNS runs' key
figures (output tok/s and TTFT p50 of every level) agree within PCT of their median.
A level a run did not measure (nothing completed) is left out of that figure, never 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tui.bench.model import BenchResult, LevelResult
from tui.bench.uncertainty import mean_interval

SETTLE_RUNS = 3  # runs that must agree: two can agree by chance

_FIGURES: tuple[tuple[str, Callable[[LevelResult], float]], ...] = (
    ("output_tok_s", lambda lv: lv.output_throughput),
    ("request_s", lambda lv: lv.request_throughput),
    ("ttft_p50_ms", lambda lv: lv.ttft.median_ms),
    ("ttft_p99_ms", lambda lv: lv.ttft.p99_ms),
    ("tpot_p50_ms", lambda lv: lv.tpot.median_ms),
    ("itl_p99_ms", lambda lv: lv.itl.p99_ms),
    ("e2el_p50_ms", lambda lv: lv.e2el.median_ms),
)
KEY_FIGURES = ("output_tok_s", "ttft_p50_ms")


@dataclass(frozen=True, slots=True)
class FigureSpread:
    figure: str  # "output_tok_s", "ttft_p50_ms", ...
    values: tuple[float | None, ...]  # one per run; None: that run did not measure it
    min: float | None
    median: float | None
    max: float | None
    low: float | None  # 95 % interval of the mean across runs; None under two runs
    high: float | None

    @property
    def spread_pct(self) -> float | None:
        """(max - min) / median, in percent; None when unknown."""
        if self.min is None or self.max is None or not self.median:
            return None
        return 100 * (self.max - self.min) / abs(self.median)


@dataclass(frozen=True, slots=True)
class LevelSpread:
    concurrency: int
    request_rate: float | None
    figures: tuple[FigureSpread, ...]

    def figure(self, name: str) -> FigureSpread | None:
        return next((f for f in self.figures if f.figure == name), None)


@dataclass(frozen=True, slots=True)
class RepeatSummary:
    asked: int  # --repeat N
    runs: int  # runs done (fewer when settled or stopped)
    settle_pct: float | None
    stopped: str  # why it ended: "all runs", "settled ...", "run 2 partial"
    levels: tuple[LevelSpread, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _spread(name: str, values: Sequence[float | None]) -> FigureSpread:
    known = [v for v in values if v is not None]
    if not known:
        return FigureSpread(name, tuple(values), None, None, None, None, None)
    low, high = mean_interval(known) if len(known) >= 2 else (None, None)
    return FigureSpread(
        name, tuple(values), min(known), statistics.median(known), max(known), low, high
    )


def level_spreads(results: Sequence[BenchResult]) -> tuple[LevelSpread, ...]:
    """Each level's figures across the runs (levels matched by position: one spec)."""
    if not results:
        return ()
    found = []
    for index, first in enumerate(results[0].levels):
        levels = [run.levels[index] if index < len(run.levels) else None for run in results]
        figures = tuple(
            _spread(name, [of(lv) if lv is not None and lv.completed else None for lv in levels])
            for name, of in _FIGURES
        )
        found.append(LevelSpread(first.concurrency, first.request_rate, figures))
    return tuple(found)


def settled(results: Sequence[BenchResult], pct: float) -> bool:
    """The last SETTLE_RUNS runs' key figures agree within `pct` % of their median."""
    if len(results) < SETTLE_RUNS:
        return False
    for level in level_spreads(results[-SETTLE_RUNS:]):
        for name in KEY_FIGURES:
            figure = level.figure(name)
            if figure is None or None in figure.values:
                return False
            spread = figure.spread_pct
            if spread is None or spread > pct:
                return False
    return True


def summarize_repeats(
    results: Sequence[BenchResult], asked: int, settle_pct: float | None, stopped: str
) -> RepeatSummary:
    return RepeatSummary(asked, len(results), settle_pct, stopped, level_spreads(results))


def summary_from_dict(data: dict[str, Any] | None) -> RepeatSummary | None:
    """Rebuild from `to_dict()` (a result's client["repeat"]); None when absent."""
    if not data:
        return None
    levels = tuple(
        LevelSpread(
            int(lv["concurrency"]),
            lv.get("request_rate"),
            tuple(FigureSpread(**{**f, "values": tuple(f["values"])}) for f in lv["figures"]),
        )
        for lv in data.get("levels") or ()
    )
    return RepeatSummary(
        int(data["asked"]), int(data["runs"]), data.get("settle_pct"), str(data["stopped"]), levels
    )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


_LABELS = {
    "output_tok_s": "out tok/s", "request_s": "req/s", "ttft_p50_ms": "TTFT p50",
    "ttft_p99_ms": "TTFT p99", "tpot_p50_ms": "TPOT p50", "itl_p99_ms": "ITL p99",
    "e2el_p50_ms": "E2EL p50",
}  # fmt: skip


def repeat_lines(summary: RepeatSummary) -> list[str]:
    """The runs' spread per level and figure: min / median / max and the 95 % interval."""
    settle = "" if summary.settle_pct is None else f", settle within {summary.settle_pct:g}%"
    lines = [
        f"repeated runs: {summary.runs} of {summary.asked}{settle} ({summary.stopped})",
        "  min / median / max  [95% interval of the mean across runs]",
    ]
    for level in summary.levels:
        load = (
            f"c={level.concurrency}" if level.request_rate is None else f"{level.request_rate:g}/s"
        )
        lines.append(f"  {load}")
        for figure in level.figures:
            interval = "n/a" if figure.low is None else f"{_num(figure.low)}-{_num(figure.high)}"
            spread = figure.spread_pct
            lines.append(
                f"    {_LABELS[figure.figure]:<9} {_num(figure.min)} / {_num(figure.median)} / "
                f"{_num(figure.max)}  [{interval}]"
                + ("" if spread is None else f"  spread {spread:.1f}%")
            )
    return lines
