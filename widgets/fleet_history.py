"""The selected host's recent history under the Fleet table: one sparkline per series.

A pure view of a HostHistory (tui.fleet.prom_history): a step with no sample is drawn
as a dim dot (a gap), never as the bottom of the scale; a history that could not be
fetched says why, and an empty one says that nothing was scraped in the window.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from textual.widgets import Static

from tui.core.formatting import duration_compact, printable
from tui.fleet.history import HostHistory, SeriesHistory
from widgets.gpu_format import spark_buckets, spark_cell

TITLE_CELLS = 13
FIGURES_CELLS = 24
GAP = "·"


def gap_sparkline(values: Sequence[float | None], width: int, top: float) -> str:
    """Values squeezed into width cells (max of each bucket); a bucket with none is a gap."""
    if not values or width <= 0:
        return ""
    cells = []
    for bucket in spark_buckets(values, width):
        known = [value for value in bucket if value is not None]
        cells.append(spark_cell(max(known), top) if known else f"[dim]{GAP}[/]")
    return "".join(cells)


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.0f}{unit}" if abs(value) >= 10 or value == 0 else f"{value:.1f}{unit}"


def series_line(series: SeriesHistory, width: int) -> str:
    """`GPU util max  ▁▂▅▇█▇  now 87%  peak 100%`, fitted to width cells."""
    spec = series.spec
    peak = series.peak
    top = spec.top if spec.top is not None else (peak if peak else 1.0)
    spark_cells = max(8, width - TITLE_CELLS - FIGURES_CELLS)
    title = f"{escape(spec.title):<{TITLE_CELLS}}"
    if not series.known:
        return f"{title}[dim]{GAP * min(spark_cells, len(series.values))}[/] no samples"
    spark = gap_sparkline(series.values, spark_cells, top)
    figures = f"now {_figure(series.last, spec.unit)}  peak {_figure(peak, spec.unit)}"
    return f"{title}{spark}  {figures}"


def history_lines(history: HostHistory | None, width: int, note: str = "") -> list[str]:
    """The view's lines (markup): a heading, then one line per series (or why there are none)."""
    if history is None:
        return [note or "history: select a Prometheus host"]
    host = escape(printable(history.host))
    window = duration_compact(history.window_s)
    head = f"[b]{host}[/b] last {window} (every {duration_compact(history.step_s)}) from Prometheus"
    if history.error is not None:
        return [f"[b]{host}[/b] history: [red]{escape(printable(history.error))}[/]"]
    if history.empty:
        return [f"[b]{host}[/b]: [yellow]no samples in the last {window}[/] (not scraped then)"]
    return [head] + [series_line(series, width) for series in history.series]


class FleetHistoryView(Static):
    """Sparklines of the selected host; `show(history, width)` redraws."""

    DEFAULT_CSS = """
    FleetHistoryView { height: auto; max-height: 4; padding: 0 1; }
    """

    def show(self, history: HostHistory | None, width: int, note: str = "") -> None:
        self.update("\n".join(history_lines(history, max(20, width - 2), note)))
