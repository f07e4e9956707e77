"""vLLM's `bench serve` report of one level, as text lines (the CLI and the Bench pane).

Mean, median and the asked percentiles (`--metric-percentiles`) of TTFT, TPOT, ITL
and E2EL in ms, then input, output and total tok/s, under vLLM's names. A figure no
sample stands behind is n/a, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.bench.adapters import adapter_lines
from tui.bench.client_load import ClientLoad
from tui.bench.model import LatencyStats, LevelResult, Spread, percentile_word
from tui.bench.over_time import TimeSlice
from tui.bench.spec_level import spec_lines
from tui.bench.uncertainty import Interval, LevelUncertainty

_LABEL = 10  # "  TTFT ms", or the level's load above them
_REPORT_CELL = 10  # one figure; the label and 7 of them fill 80 columns
_REPORT_FIGURES = 7


def _stat_cells(stats: LatencyStats, width: int) -> list[str]:
    """mean, median and each asked percentile; n/a where no sample stands behind them."""
    if not stats.count:
        return ["n/a"] * width
    figures = [stats.mean_ms, stats.median_ms, *(value for _, value in stats.selected_ms())]
    return [_ms(value) for value in figures]


def _ms(value: float) -> str:
    """Two decimals while they fit a cell (with a space before it), fewer for long waits."""
    for text in (f"{value:,.2f}", f"{value:,.0f}"):
        if len(text) < _REPORT_CELL:
            return text
    return f"{value:.3e}"


def _head(percentile: float) -> str:
    """`p99`, `p99.9`: vLLM's word, shortened only where it would not fit its cell."""
    word = percentile_word(percentile)
    return f"p{word}" if len(word) < _REPORT_CELL - 1 else f"p{percentile:.4g}"[: _REPORT_CELL - 1]


def _spread_cells(spread: Spread | None, width: int) -> list[str]:
    if spread is None or not spread.count:
        return ["n/a"] * width
    values = [spread.mean, spread.median, *(value for _, value in spread.percentiles)]
    return [_ms(value) for value in values]


def report_lines(level: LevelResult) -> list[str]:
    """vLLM's report of one level: mean, median and percentiles of TTFT, TPOT, ITL and
    E2EL in ms, then input, output and total tok/s; 80 columns at most. Below vLLM's
    rows: time to second token, per-user tok/s and the HTTP phases, where measured."""
    load = f"c={level.concurrency}" if level.request_rate is None else f"{level.request_rate:g}/s"
    metrics = (("TTFT", level.ttft), ("TPOT", level.tpot), ("ITL", level.itl), ("E2EL", level.e2el))
    measured_stats = [stats for _, stats in metrics if stats.count]
    asked = (measured_stats[0] if measured_stats else level.ttft).selected_ms()
    heads = ["mean", "median", *(_head(p) for p, _ in asked)]
    rows = [(f"  {name} ms", _stat_cells(stats, len(heads))) for name, stats in metrics]
    if level.ttst is not None:
        rows.append(("  TTST ms", _stat_cells(level.ttst, len(heads))))
    if level.user_tok_s is not None:
        rows.append(("  tok/s/u", _spread_cells(level.user_tok_s, len(heads))))
    if level.http is not None:
        rows += [
            ("  conn ms", _stat_cells(level.http.connect, len(heads))),
            ("  send ms", _stat_cells(level.http.send, len(heads))),
            ("  wait ms", _stat_cells(level.http.wait, len(heads))),
        ]
    lines: list[str] = []
    for start in range(0, len(heads), _REPORT_FIGURES):
        cut = slice(start, start + _REPORT_FIGURES)
        title = load if start == 0 else ""
        lines.append(f"{title:<{_LABEL}}" + "".join(f"{h:>{_REPORT_CELL}}" for h in heads[cut]))
        lines += [
            f"{label:<{_LABEL}}" + "".join(f"{c:>{_REPORT_CELL}}" for c in cells[cut])
            for label, cells in rows
        ]
    measured = level.completed > 0

    def rate(value: float | None) -> str:
        return f"{value:,.1f}" if measured and value is not None else "n/a"

    lines.append(
        f"{'  tok/s':<{_LABEL}}input {rate(level.input_tok_s)}"
        f"  output {rate(level.output_throughput)}  total {rate(level.total_token_throughput)}"
    )
    lines += spec_lines(level)  # acceptance over the level; ITL per chunk and per token
    lines += over_time_lines(level.over_time)
    if level.client_load is not None:
        lines += client_lines(level.client_load)
    if level.uncertainty is not None:
        lines += interval_lines(level.uncertainty)
    lines += adapter_lines(level.adapters)
    return lines


_TICKS = "▁▂▃▄▅▆▇█"
_SPARK = 48  # slices drawn: the last ones of a longer level, averaged in pairs first


def sparkline(values: Sequence[float | None]) -> str:
    """One block per value from its share of the highest; a space where none was measured."""
    top = max((v for v in values if v is not None), default=0.0)
    return "".join(
        " " if v is None else _TICKS[min(7, int(8 * v / top)) if top > 0 else 0] for v in values
    )


def _fit(values: Sequence[float | None]) -> list[float | None]:
    """At most _SPARK values: neighbours averaged until they fit."""
    fitted = list(values)
    while len(fitted) > _SPARK:
        pairs = [fitted[i : i + 2] for i in range(0, len(fitted), 2)]
        fitted = [
            None if not (seen := [v for v in pair if v is not None]) else sum(seen) / len(seen)
            for pair in pairs
        ]
    return fitted


def over_time_lines(slices: Sequence[TimeSlice]) -> list[str]:
    """The level over time, one sparkline a figure, with its range (the pane and the CLI)."""
    if len(slices) < 2:
        return []
    width = slices[1].start_s - slices[0].start_s
    rows = (
        ("tok/s", [s.output_tok_s for s in slices], ",.0f"),
        ("running", [s.running for s in slices], ",.1f"),
        ("TTFT ms", [s.ttft_p50_ms for s in slices], ",.0f"),
    )
    lines = [f"  over time: {len(slices)} slices of {width:g} s (TTFT: median of the slice)"]
    for label, values, spec in rows:
        seen = [v for v in values if v is not None]
        span = f"{format(min(seen), spec)}-{format(max(seen), spec)}" if seen else "n/a"
        lines.append(f"{'  ' + label:<{_LABEL}}{sparkline(_fit(values))} {span}")
    return lines


def client_lines(load: ClientLoad) -> list[str]:
    """The client's send lag, loop lag and CPU; a client-bound level says whose limit it is."""

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value:,.1f} ms"

    cpu = "n/a" if load.cpu_share is None else f"{100 * load.cpu_share:.0f}%"
    lines = [
        f"{'  client':<{_LABEL}}send lag p99 {ms(load.send_lag_p99_ms)}"
        f"  loop lag p99 {ms(load.loop_lag_p99_ms)}  CPU {cpu}"
    ]
    if load.bound:
        lines.append("  CLIENT-BOUND: the client's limit, not the server's")
        lines += [f"    {reason}" for reason in load.reasons]
    return lines


_INTERVAL_NAMES = (
    ("ttft_ms", "TTFT ms"), ("tpot_ms", "TPOT ms"), ("e2el_ms", "E2EL ms"),
    ("user_tok_s", "tok/s/u"),
)  # fmt: skip


def _figure(value: float) -> str:
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"


def _interval_cell(interval: Interval) -> str:
    """`p50 12.1-14.3`, or `p99 >=19.6` for an interval open above."""
    if interval.high is None:
        return f"{interval.figure} >={_figure(interval.low)}"
    return f"{interval.figure} {_figure(interval.low)}-{_figure(interval.high)}"


def interval_lines(found: LevelUncertainty) -> list[str]:
    """The 95 % intervals of mean, median and the highest asked percentile; SLO attainment.

    A figure open above gets one line saying why ("p99: upper bound unknown: 24
    requests, need >= 368"), once per level for each figure and count of requests."""
    lines = [f"  {100 * found.confidence:g}% intervals over requests (seed {found.seed})"]
    unknown: dict[str, None] = {}
    for name, label in _INTERVAL_NAMES:
        metric = found.metric(name)
        if metric is None:
            continue
        shown = [metric.intervals[0], metric.intervals[1], metric.intervals[-1]]
        shown = list(dict.fromkeys(shown))
        cells = "  ".join(_interval_cell(i) for i in shown)
        lines.append(f"{'  ' + label:<{_LABEL}}{cells}")
        unknown.update(
            (f"    {i.figure}: {i.unknown_above()}", None) for i in shown if i.high is None
        )
    lines += list(unknown)
    slo = found.slo
    if slo is not None:
        lines.append(
            f"  SLO met by {slo.met}/{slo.total} ({100 * slo.low:.1f}-{100 * slo.high:.1f}%),"
            f" target {100 * slo.target:g}%: {slo.describe()}"
        )
    return lines
