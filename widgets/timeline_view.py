"""The Timeline's views: the event table and the recorded state at the selected event.

Pure views: given events or a RecordedState they draw; the screen does the reading.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable, Static

from tui.record.model import Event
from tui.record.query import RecordedState

KIND_STYLES = {
    "gpu": "cyan",
    "engine": "green",
    "service": "blue",
    "log": "yellow",
    "action": "magenta",
    "alert": "bold red",
}
GIB = 1024**3


def clock(ts_s: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.localtime(ts_s))


# Cells of the columns before What; What takes the rest of the width, cut with an ellipsis.
_FIXED_CELLS = {"time": 14, "kind": 7, "source": 10, "gpu": 3}
_MIN_WHAT_CELLS = 20


def short_source(source: str) -> str:
    """The source as a short word: a log file's name, not its whole path (`server.log`)."""
    name = source.rstrip("/").rsplit("/", 1)[-1] or source
    return name if len(name) <= _FIXED_CELLS["source"] else name[: _FIXED_CELLS["source"] - 1] + "…"


class TimelineTable(DataTable[Text]):
    """One row per event, oldest first; the row key is the event's index in the list shown.

    The columns have fixed widths and What the rest of the pane, so a long log path or
    message never pushes the text sideways out of view. End and Home select the newest and
    the oldest event (a DataTable scrolls sideways there).
    """

    DEFAULT_CSS = """
    TimelineTable { height: 1fr; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._events: Sequence[Event] = ()
        self._what_cells = 0

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        self._add_columns()

    def _fitted_what_cells(self) -> int:
        fixed = sum(_FIXED_CELLS.values()) + 2 * self.cell_padding * (len(_FIXED_CELLS) + 1)
        room = self.size.width - fixed - self.styles.scrollbar_size_vertical
        return max(_MIN_WHAT_CELLS, room)

    def _add_columns(self) -> None:
        self._what_cells = self._fitted_what_cells()
        for key, label in (
            ("time", "Time"),
            ("kind", "Kind"),
            ("source", "Source"),
            ("gpu", "GPU"),
        ):
            self.add_column(label, key=key, width=_FIXED_CELLS[key])
        self.add_column("What", key="text", width=self._what_cells)

    def on_resize(self) -> None:
        if self._fitted_what_cells() != self._what_cells:
            row = self.cursor_row
            self.clear(columns=True)
            self._add_columns()
            self._add_rows()
            if self._events:
                self.move_cursor(row=min(row, len(self._events) - 1))

    def show_events(self, events: Sequence[Event]) -> None:
        self._events = events
        self.clear()
        self._add_rows()
        if events:
            self.move_cursor(row=len(events) - 1)

    def _add_rows(self) -> None:
        for index, event in enumerate(self._events):
            self.add_row(
                Text(clock(event.ts_s)),
                Text(event.kind, style=KIND_STYLES.get(event.kind, "")),
                Text(short_source(event.source)),
                Text("" if event.gpu is None else str(event.gpu)),
                Text(event.text, no_wrap=True, overflow="ellipsis"),
                key=str(index),
            )

    def action_scroll_end(self) -> None:
        """End: the newest event."""
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)

    def action_scroll_home(self) -> None:
        """Home: the oldest event."""
        if self.row_count:
            self.move_cursor(row=0)


def _value(value: float | int | None, fmt: str = "{:g}", unit: str = "") -> str:
    return "n/a" if value is None else fmt.format(value) + unit


def render_state(state: RecordedState) -> Text:
    """What the console showed at that instant, in a few lines."""
    out = Text()
    out.append(f"State at {clock(state.at_s)}\n", style="bold")
    out.append(f"service  {state.unit_text or 'not recorded'}\n")
    phase = state.phase or "unknown"
    ready = {True: "ready", False: "not ready", None: "readiness unknown"}[state.ready]
    out.append(f"engine   phase {phase}, {ready}\n")
    metrics = state.metrics
    if metrics is not None:
        out.append(
            f"serving  running {_value(metrics.running_reqs)}, waiting {_value(metrics.waiting_reqs)}, "
            f"KV {_value(metrics.kv_cache_usage_pct, '{:.1f}', ' %')}, "
            f"gen {_value(metrics.generation_tokens_per_s, '{:.1f}', ' tok/s')}, "
            f"TTFT p50 {_value(metrics.ttft_p50_s, '{:.3f}', ' s')}\n"
        )
    else:
        out.append("serving  no metrics recorded near this time\n")
    gpu = state.gpu
    if not gpu.available:
        out.append(f"GPUs     {gpu.error}\n", style="dim")
        return out
    out.append(f"GPUs     sample of {clock(gpu.taken_at_s)}\n")
    for sample in gpu.samples:
        used = sample.memory_used_bytes
        total = sample.memory_total_bytes
        memory = (
            f"{used / GIB:5.1f}/{total / GIB:.0f} GiB"
            if used is not None and total
            else "memory n/a"
        )
        lost = "  LOST" if sample.lost else ""
        out.append(
            f"  GPU {sample.index}  {memory}  util {_value(sample.utilization_gpu_pct, '{:.0f}', ' %')}  "
            f"{_value(sample.temperature_c, '{:.0f}', ' C')}  {_value(sample.power_w, '{:.0f}', ' W')}{lost}\n"
        )
    return out


class RecordedStateView(Static):
    """The state at the selected event."""

    def show_state(self, state: RecordedState | None, note: str = "") -> None:
        self.update(render_state(state) if state is not None else Text(note, style="dim"))
