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


class TimelineTable(DataTable[Text]):
    """One row per event, oldest first; the row key is the event's index in the list shown."""

    DEFAULT_CSS = """
    TimelineTable { height: 1fr; }
    """

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for key, label in (
            ("time", "Time"),
            ("kind", "Kind"),
            ("source", "Source"),
            ("gpu", "GPU"),
            ("text", "What"),
        ):
            self.add_column(label, key=key)

    def show_events(self, events: Sequence[Event]) -> None:
        self.clear()
        for index, event in enumerate(events):
            self.add_row(
                Text(clock(event.ts_s)),
                Text(event.kind, style=KIND_STYLES.get(event.kind, "")),
                Text(event.source),
                Text("" if event.gpu is None else str(event.gpu)),
                Text(event.text, no_wrap=True, overflow="ellipsis"),
                key=str(index),
            )
        if events:
            self.move_cursor(row=len(events) - 1)


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
