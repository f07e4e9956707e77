"""Replay: the Deck as it was at a recorded instant, stepped through time; nothing acts.

Each seek reads one GPU tick, one metrics row, the last unit/load/readiness events
and the 5 minutes of ticks behind the sparklines, all by primary key or index.
The screen has no action keys, and the console refuses its own while it is open.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.gpu.history import GpuHistory
from tui.record.query import RecordedState, RecordingReader
from tui.serving.unit.service import UnitState
from widgets.footer import Footer
from widgets.gpu_pane import GpuPane
from widgets.keys import bindings_for
from widgets.service_line import ServiceLine
from widgets.timeline_view import clock

STEP_S = 1.0
TREND_WINDOW_S = 300.0


def unit_from(recorded: dict[str, object] | None) -> UnitState | None:
    """The recorded UnitState (None when not recorded or from an unreadable record)."""
    if not recorded:
        return None
    try:
        return UnitState(**recorded)  # type: ignore[arg-type]
    except TypeError:
        return None


def metrics_text(state: RecordedState) -> Text:
    metrics = state.metrics
    phase = f"load phase {state.phase}" if state.phase else "load phase not recorded"
    if metrics is None:
        return Text(f"{phase}; no serving metrics near this time", style="dim")

    def shown(value: float | None, fmt: str = "{:g}") -> str:
        return "n/a" if value is None else fmt.format(value)

    parts = [
        phase,
        f"running {shown(metrics.running_reqs)}",
        f"waiting {shown(metrics.waiting_reqs)}",
        f"KV {shown(metrics.kv_cache_usage_pct, '{:.1f}')} %",
        f"gen {shown(metrics.generation_tokens_per_s, '{:.1f}')} tok/s",
    ]
    return Text("; ".join(parts))


class ReplayScreen(Screen[None]):
    DEFAULT_CSS = """
    ReplayScreen #replay-banner { height: 1; background: $error; color: $text; text-style: bold; padding: 0 1; }
    ReplayScreen #replay-metrics { height: 1; padding: 0 1; }
    ReplayScreen #replay-events { height: 8; border-top: solid $accent; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("replay")
    KEY_SCOPE = "replay"  # `?` lists these keys as the ones that work here

    def __init__(self, db_path: Path, at_s: float, host_label: str = "") -> None:
        super().__init__()
        self.db_path = db_path
        self.at_s = at_s
        self.host_label = host_label
        self.state: RecordedState | None = None
        self.seek_s: float | None = None  # how long the last seek took
        self._reader: RecordingReader | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="replay-banner")
            yield ServiceLine(id="replay-service")
            yield Static("", id="replay-metrics")
            yield GpuPane(id="replay-gpus")
            yield Static("", id="replay-events")
        yield Footer()

    def on_mount(self) -> None:
        self._seek(self.at_s)

    def on_unmount(self) -> None:
        if self._reader is not None:
            self._reader.close()

    def _banner(self, note: str = "") -> None:
        text = f"REPLAY  {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.at_s))}"
        text += "   (recorded state; actions are off)   [ ] step  { } events  esc leaves"
        self.query_one("#replay-banner", Static).update(text + (f"   {note}" if note else ""))

    @console_worker("replay-seek", pane="replay", what="seek in the recording", thread=True)
    def _seek(self, at_s: float) -> None:
        started = time.perf_counter()
        try:
            if self._reader is None:
                self._reader = RecordingReader(self.db_path)
            state = self._reader.state_at(at_s, recent=8)
            series = self._reader.gpu_series(at_s - TREND_WINDOW_S, at_s)
        except ServedeckError as error:
            self.app.call_from_thread(self._banner, str(error))
            return
        history = GpuHistory(window_s=TREND_WINDOW_S, target_fraction=0.9)
        for snapshot in series:
            history.add(snapshot)
        elapsed = time.perf_counter() - started
        self.app.call_from_thread(self._show, at_s, state, history, elapsed)

    def _show(
        self, at_s: float, state: RecordedState, history: GpuHistory, elapsed_s: float
    ) -> None:
        self.at_s, self.state, self.seek_s = at_s, state, elapsed_s
        self._banner()
        unit = unit_from(state.unit)
        self.query_one(ServiceLine).show(
            unit, self.host_label or "recording", bool(state.ready), error="not recorded"
        )
        self.query_one("#replay-metrics", Static).update(metrics_text(state))
        self.query_one(GpuPane).update_view(state.gpu, history.trends())
        lines = Text()
        for event in state.recent:
            lines.append(f"{clock(event.ts_s)}  {event.kind:<7} {event.text}\n")
        self.query_one("#replay-events", Static).update(lines)

    def action_step(self, direction: int) -> None:
        self._seek(self.at_s + direction * STEP_S)

    @console_worker("replay-jump", pane="replay", what="jump to the next event", thread=True)
    def action_jump(self, forward: bool) -> None:
        try:
            if self._reader is None:
                self._reader = RecordingReader(self.db_path)
            event = self._reader.neighbour_event(self.at_s, forward)
        except ServedeckError as error:
            self.app.call_from_thread(self._banner, str(error))
            return
        if event is None:
            self.app.call_from_thread(self.notify, "No more events that way.", title="Replay")
            return
        self.app.call_from_thread(self._seek, event.ts_s)

    def action_close(self) -> None:
        self.dismiss(None)
