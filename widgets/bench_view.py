"""The Benchmark pane: live progress, a table per level, a chart, and past runs compared.

A pure view: it is handed frozen events and results from tui.bench and draws
them; it never measures or computes a metric itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from tui.bench.best import COMPLETE, figure_of
from tui.bench.model import BenchResult, LevelResult
from tui.bench.report import report_lines
from tui.core.formatting import NA

if TYPE_CHECKING:  # the driver loads with the first run, not with the console
    from tui.bench.driver import BenchProgress, BenchStarted

FORMULAS = (
    "TTFT = first token chunk - send time;  E2EL = last token chunk - send time;\n"
    "TPOT = (E2EL - TTFT) / (output tokens - 1);  ITL = every chunk-to-chunk gap (pooled);\n"
    "output tok/s = output tokens / (first dispatch .. last completion)  (vLLM bench serve)\n"
    "1-stream tok/s = output tok/s at c=1 (the c=1 row);  decode tok/s per stream = 1 / TPOT\n"
    "latencies in ms;  input/total tok/s = prompt/(prompt+output) tokens over the same span"
)
_BAR_WIDTH = 28
# Latencies in ms (said in the formulas): headers without the unit fit 80 columns; the
# highlighted level's whole report (mean, median, each percentile) is drawn below.
_LEVEL_COLUMNS = (
    "load", "ok", "fail", "TTFT p50", "TTFT p99", "TPOT p50", "ITL p99", "out tok/s", "req/s",
)  # fmt: skip
_HISTORY_COLUMNS = (
    "when", "preset", "model", "GPUs", "TP/EP", "config", "1-stream tok/s", "best tok/s", "at",
)  # fmt: skip


def _load_label(level: LevelResult) -> str:
    return f"c={level.concurrency}" if level.request_rate is None else f"{level.request_rate:g}/s"


def _figure(value: float, measured: int | bool, spec: str) -> str:
    """A measured figure, or n/a where no sample stands behind it."""
    return format(value, spec) if measured else NA


def _bar(value: float, top: float, style: str) -> Text:
    filled = 0 if top <= 0 else round(_BAR_WIDTH * value / top)
    return Text("█" * filled + "·" * (_BAR_WIDTH - filled), style=style)


class BenchView(VerticalScroll):
    """Live progress, per-level results, a throughput/TTFT chart and past runs."""

    DEFAULT_CSS = """
    BenchView { padding: 0 1; }
    BenchView > Static { height: auto; margin: 0 0 1 0; }
    BenchView > DataTable { height: auto; max-height: 14; margin: 0 0 1 0; }
    BenchView #bench-formulas { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._levels: dict[str, LevelResult] = {}  # by row key (its place), for the detail view

    def compose(self) -> ComposeResult:
        yield Static(Text("No benchmark yet: press b to run the default preset.", style="dim"),
                     id="bench-progress")  # fmt: skip
        levels: DataTable[str | Text] = DataTable(
            id="bench-levels", cursor_type="row", zebra_stripes=True
        )
        levels.add_columns(*_LEVEL_COLUMNS)
        yield levels
        yield Static("", id="bench-detail")
        yield Static("", id="bench-chart")
        history: DataTable[str | Text] = DataTable(id="bench-history", cursor_type="row")
        history.add_columns(*_HISTORY_COLUMNS)
        yield history
        yield Static(FORMULAS, id="bench-formulas")

    def show_event(self, event: object) -> None:
        """Draw any event the benchmark process streams (started, progress, level, result)."""
        from tui.bench.driver import BenchProgress, BenchStarted

        if isinstance(event, BenchStarted):
            self.show_started(event)
        elif isinstance(event, BenchProgress):
            self.show_progress(event)
        elif isinstance(event, LevelResult):
            self.show_level(event)
        elif isinstance(event, BenchResult):
            self.show_result(event)

    def show_started(self, started: BenchStarted) -> None:
        version = f" {started.engine_version}" if started.engine_version else ""
        self.query_one("#bench-progress", Static).update(
            Text(f"Running against {started.model}{version} ({started.prompt_method})")
        )
        self.query_one("#bench-levels", DataTable).clear()
        self._levels.clear()
        self.query_one("#bench-detail", Static).update("")
        self.query_one("#bench-chart", Static).update("")

    def show_progress(self, progress: BenchProgress) -> None:
        load = (
            "warm-up"  # level -1: waiting for the warm-up request's answer
            if progress.level < 0
            else f"c={progress.concurrency}"
            if progress.request_rate is None
            else f"{progress.request_rate:g} req/s"
        )
        line = Text.assemble(
            (f"{load}  ", "bold"),
            f"{progress.done}/{progress.total} requests  ",
            (f"{progress.tok_s:,.0f} tok/s now  ", "bold cyan"),
            (f"{progress.failed} errors", "bold red" if progress.failed else "dim"),
            f"  {progress.elapsed_s:.0f} s",
        )
        self.query_one("#bench-progress", Static).update(line)

    def show_error(self, message: str) -> None:
        self.query_one("#bench-progress", Static).update(Text(message, style="bold red"))

    def show_level(self, level: LevelResult) -> None:
        table = self.query_one("#bench-levels", DataTable)
        fail = Text(str(level.failed), style="bold red" if level.failed else "")
        key = str(len(self._levels))  # its place in the run: two levels at one load stay two
        measured = level.completed > 0  # nothing completed: nothing measured, never 0
        marks = (" *" if level.partial else "") + (" !" if level.client_bound else "")
        table.add_row(
            _load_label(level) + marks,
            f"{level.completed}/{level.num_requests}",
            fail,
            _figure(level.ttft.median_ms, level.ttft.count, ",.1f"),
            _figure(level.ttft.p99_ms, level.ttft.count, ",.1f"),
            _figure(level.tpot.median_ms, level.tpot.count, ",.2f"),
            _figure(level.itl.p99_ms, level.itl.count, ",.2f"),
            _figure(level.output_throughput, measured, ",.1f"),
            _figure(level.request_throughput, measured, ",.2f"),
            key=key,
        )
        self._levels[key] = level
        table.move_cursor(row=table.get_row_index(key))  # the newest level, and its report
        self._show_detail(level)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted level's whole report (vLLM's figures) below the table."""
        if event.data_table.id != "bench-levels" or event.row_key.value is None:
            return
        level = self._levels.get(event.row_key.value)
        if level is not None:
            self._show_detail(level)

    def _show_detail(self, level: LevelResult) -> None:
        self.query_one("#bench-detail", Static).update(Text("\n".join(report_lines(level))))

    def show_result(self, result: BenchResult) -> None:
        self.query_one("#bench-levels", DataTable).clear()
        self._levels.clear()
        for level in result.levels:
            self.show_level(level)
        self.query_one("#bench-chart", Static).update(self._chart(result.levels))
        context = result.context
        state = "partial result (cancelled)" if result.partial else "done"
        self.query_one("#bench-progress", Static).update(
            Text.assemble(
                (f"{result.preset} {state}: ", "bold"),
                f"{context.model} on {context.host or context.base_url}, "
                f"input {result.input_tokens_sent or result.input_tokens} (sent) / "
                f"output {result.output_tokens} tokens",
            )
        )

    @staticmethod
    def _chart(levels: Sequence[LevelResult]) -> Table:
        chart = Table.grid(padding=(0, 1))
        # Bars shrink (cropped) when the pane is narrow; labels and figures never do.
        for column in range(5):
            bar = column in (1, 3)
            chart.add_column(no_wrap=not bar, overflow="crop" if bar else "ellipsis")
        chart.add_row(Text("load", style="bold"), Text("output tok/s", style="bold"), "",
                      Text("TTFT p50", style="bold"), "")  # fmt: skip
        top_tok = max((level.output_throughput for level in levels), default=0.0)
        top_ttft = max((level.ttft.median_ms for level in levels), default=0.0)
        for level in levels:
            ttft = f"{level.ttft.median_ms:>8,.1f} ms" if level.ttft.count else f"{NA:>11}"
            chart.add_row(
                _load_label(level),
                _bar(level.output_throughput, top_tok, "green"),
                f"{level.output_throughput:>9,.0f}" if level.completed else f"{NA:>9}",
                _bar(level.ttft.median_ms, top_ttft, "yellow"),
                ttft,
            )
        return chart

    def show_history(self, runs: Sequence[BenchResult]) -> None:
        """Past runs of this host, newest first: one row per run."""
        table = self.query_one("#bench-history", DataTable)
        table.clear()
        for index, run in enumerate(runs):
            context = run.context
            figure = figure_of(run)  # prefill: prompt tok/s; nothing measured: n/a
            single = figure.single_stream_tok_s
            unit = " prompt" if figure.kind == "prefill" and figure.tok_s is not None else ""
            table.add_row(
                run.started_at[:16].replace("T", " "),
                run.preset + ("" if figure.state == COMPLETE else f" * {figure.state}"),
                context.model,
                context.gpus or "?",
                f"TP{context.tp}" + ("+EP" if context.ep else ""),
                context.config_hash[:8],
                f"{single:,.1f}" if single else NA,
                f"{figure.tok_s:,.0f}{unit}" if figure.tok_s is not None else NA,
                figure.at,
                key=str(index),  # a run id can repeat in a copied or merged history file
            )
