"""The Timeline: every recorded event of this host in one list, filtered, with the state then.

Reading runs in a thread worker (a week of events is a few indexed queries);
selecting an event shows the recorded GPU/metrics/unit state at its instant.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from tui.alerts.engine import AlertEngine
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.record.model import KINDS, Event
from tui.record.query import RecordedState, RecordingReader
from widgets.footer import Footer
from widgets.keys import bindings_for
from widgets.timeline_view import RecordedStateView, TimelineTable

MAX_EVENTS = 5000
MUTE_S = 3600.0
_PATH = re.compile(r"(?:/[^/\s]+)+/([^/\s]+)")


def fitted_status(status: str, cells: int) -> str:
    """The recorder's status in `cells`: a path shortened to its file name first, then cut."""
    if len(status) > cells:
        status = _PATH.sub(r"\1", status)
    if len(status) > cells:
        status = status[: max(0, cells - 1)] + "…"
    return status


class TimelineScreen(Screen[None]):
    DEFAULT_CSS = """
    TimelineScreen #timeline-status { height: 1; background: $boost; padding: 0 1; }
    TimelineScreen #timeline-search { display: none; }
    TimelineScreen #timeline-search.shown { display: block; }
    TimelineScreen RecordedStateView { height: 14; border-top: solid $accent; padding: 0 1; }
    """
    AUTO_FOCUS = "#timeline-table"
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("timeline")
    KEY_SCOPE = "timeline"  # `?` lists these keys as the ones that work here

    def __init__(
        self,
        db_path: Path,
        *,
        status: str = "",
        gpu_count: int = 8,
        engine: AlertEngine | None = None,
        open_replay: Callable[[float], None] | None = None,
        persist_alert: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.db_path = db_path
        self.recorder_status = status
        self.gpu_count = gpu_count
        self.engine = engine
        self.open_replay = open_replay
        self.persist_alert = persist_alert or (lambda alert_id: None)
        self.kind: str | None = None
        self.gpu: int | None = None
        self.search = ""
        self.events: list[Event] = []
        self.error: str | None = None
        self.skipped = ""  # "2 bad row(s) skipped in FILE" of the last read
        self._generation = 0  # a cancelled thread worker still finishes: drop its late answer

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="timeline-status")
            yield Input(
                placeholder="search the timeline (enter applies, escape clears)",
                id="timeline-search",
            )
            yield TimelineTable(id="timeline-table")
            yield RecordedStateView("", id="timeline-state")
        yield Footer()

    def on_mount(self) -> None:
        self._show_status()
        self.action_reload()

    # --- reading --------------------------------------------------------------------------
    def _reader(self) -> RecordingReader:
        return RecordingReader(self.db_path)

    def action_reload(self) -> None:
        self._generation += 1
        self._read(self._generation)

    @console_worker("timeline-read", pane="timeline", what="read the recording", thread=True)
    def _read(self, generation: int) -> None:
        try:
            with self._reader() as reader:
                events = reader.events(
                    kinds=(self.kind,) if self.kind else (), gpu=self.gpu, search=self.search
                )[-MAX_EVENTS:]
                skipped = reader.bad_rows_note
            error = None
        except ServedeckError as failure:
            events, error, skipped = [], str(failure), ""
        self.app.call_from_thread(self._show_events, generation, events, error, skipped)

    def _show_events(
        self, generation: int, events: list[Event], error: str | None, skipped: str = ""
    ) -> None:
        if generation != self._generation:
            return
        self.events, self.error, self.skipped = events, error, skipped
        self.query_one(TimelineTable).show_events(events)
        self._show_status()
        if not events:
            self.query_one(RecordedStateView).show_state(None, error or "No events match.")

    @console_worker("timeline-state", pane="timeline", what="read the recorded state", thread=True)
    def _load_state(self, at_s: float) -> None:
        try:
            with self._reader() as reader:
                state: RecordedState | None = reader.state_at(at_s)
            note = ""
        except ServedeckError as failure:
            state, note = None, str(failure)
        self.app.call_from_thread(self.query_one(RecordedStateView).show_state, state, note)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        selected = self.selected()
        if selected is not None:
            self._load_state(selected.ts_s)

    def selected(self) -> Event | None:
        table = self.query_one(TimelineTable)
        if not self.events or table.cursor_row < 0 or table.cursor_row >= len(self.events):
            return None
        return self.events[table.cursor_row]

    def _show_status(self) -> None:
        filters = [
            f"kind {self.kind or 'all'}",
            f"GPU {'all' if self.gpu is None else self.gpu}",
        ]
        if self.search:
            filters.append(f"search {self.search!r}")
        count = f"{len(self.events)} event(s)" if self.error is None else self.error
        if self.skipped and self.error is None:
            count += f" ({self.skipped})"
        text = f"Timeline: {count}; {', '.join(filters)}"
        status = self.query_one("#timeline-status", Static)
        room = status.size.width - 2 - len(text) - 5  # its padding, the gap and the brackets
        recorder = fitted_status(self.recorder_status, room) if room > 0 else ""
        status.update(Text(f"{text}   [{recorder}]" if recorder else text))

    def on_resize(self) -> None:
        self._show_status()

    # --- keys ---------------------------------------------------------------------------------
    def action_close(self) -> None:
        search = self.query_one("#timeline-search", Input)
        if search.has_class("shown"):
            search.remove_class("shown")
            self.query_one(TimelineTable).focus()
            return
        self.dismiss(None)

    def action_newest(self) -> None:
        self.query_one(TimelineTable).action_scroll_end()

    def action_oldest(self) -> None:
        self.query_one(TimelineTable).action_scroll_home()

    def action_search(self) -> None:
        search = self.query_one("#timeline-search", Input)
        search.add_class("shown")
        search.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.search = event.value.strip()
        event.input.remove_class("shown")
        self.query_one(TimelineTable).focus()
        self.action_reload()

    def action_cycle_kind(self) -> None:
        order: list[str | None] = [None, *KINDS]
        self.kind = order[(order.index(self.kind) + 1) % len(order)]
        self.action_reload()

    def action_cycle_gpu(self) -> None:
        order: list[int | None] = [None, *range(self.gpu_count)]
        self.gpu = order[(order.index(self.gpu) + 1) % len(order)]
        self.action_reload()

    def action_replay(self) -> None:
        selected = self.selected()
        if selected is None or self.open_replay is None:
            self.notify("Select an event to replay from.", severity="warning")
            return
        self.open_replay(selected.ts_s)

    def _selected_alert(self) -> str | None:
        selected = self.selected()
        if selected is None or selected.kind != "alert" or self.engine is None:
            self.notify("Select an alert of this console's session first.", severity="warning")
            return None
        return str(selected.data.get("alert") or "") or None

    def action_mute(self) -> None:
        alert_id = self._selected_alert()
        if alert_id and self.engine is not None:
            self.engine.mute(alert_id, MUTE_S)
            self.persist_alert(alert_id)
            self.notify(f"{alert_id} muted for 1 h (still recorded)", title="Alerts")

    def action_ack(self) -> None:
        alert_id = self._selected_alert()
        if alert_id and self.engine is not None:
            self.engine.acknowledge(alert_id)
            self.persist_alert(alert_id)
            state = "acknowledged" if alert_id in self.engine.acked else "not firing now"
            self.notify(f"{alert_id}: {state}", title="Alerts")
