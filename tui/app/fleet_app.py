"""The Fleet pane: every host of a group on one screen; Enter opens one host's full Deck.

`FleetApp` exits with the host chosen; tui/app/fleet_run.py then runs that host's console
and comes back here. The actions on a host are tui/app/fleet_actions.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.markup import escape
from textual import events
from textual.app import App, ComposeResult
from textual.binding import NoBinding
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from tui.app.console_workers import WorkerFailed, console_worker
from tui.app.fleet_actions import FleetActionDone, FleetActions, FleetPlanned
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.core.formatting import printable
from tui.core.keymap import COMMANDS, FLEET_SCOPES, effective_keys
from tui.fleet.deployments import grouped, head_host
from tui.fleet.feed import FleetRowSource
from tui.fleet.history import HostHistory
from tui.fleet.model import FleetRow
from tui.fleet.summary import fleet_markdown
from tui.fleet.view import SORT_KEYS, matches, sorted_rows, summarize
from tui.screens.help import HelpScreen
from widgets.fleet_history import FleetHistoryView
from widgets.fleet_table import FleetTable
from widgets.footer import Footer
from widgets.keys import bindings_for

if TYPE_CHECKING:  # httpx is imported only when a Prometheus source is made
    from tui.fleet.prom_history import PrometheusHistory

BASE_INTERVAL_S = 2.0
HISTORY_EVERY_S = 15.0
FETCH_HISTORY = "fetch the host's history"


def source_text(text: str) -> str:
    """Text a source chose (a host name, an error) as markup that draws it as it is."""
    return escape(printable(text))


@dataclass
class FleetRows(Message):
    rows: list[FleetRow]
    took_s: float


@dataclass
class FleetHistoryFetched(Message):
    history: HostHistory


class FleetApp(App[str | None]):
    """Rows, sort, `/` filter and a summary line; exits with the host chosen by Enter."""

    TITLE = "servedeck fleet"
    CSS = """
    #summary { height: 1; background: $boost; padding: 0 1; }
    #filter { display: none; height: 3; }
    #filter.shown { display: block; }
    #status { height: 1; color: $text-muted; padding: 0 1; }
    #selected { height: 1; padding: 0 1; }
    FleetTable { height: 1fr; }
    """
    BINDINGS = bindings_for("fleet")

    def __init__(
        self,
        collector: FleetRowSource,
        *,
        rows: Sequence[FleetRow] = (),
        interval_s: float = BASE_INTERVAL_S,
        history: PrometheusHistory | None = None,
        history_every_s: float = HISTORY_EVERY_S,
        title: str = "",
        keys: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.keys = dict(keys or {})  # the group's [keys] remaps, by binding id
        self.collector = collector
        self.history_source = history
        self.history_every_s = history_every_s
        self.history: HostHistory | None = None  # the selected host's, as last fetched
        self._history_host: str | None = None
        self._history_row: tuple[str, str] | None = None  # (host, source) it is for
        self.rows: list[FleetRow] = list(rows)
        self.interval_s = interval_s
        self.sort_column = "state"
        self.descending = False
        self.filter_text = ""
        self.refreshes = 0
        self._refresh_note = "waiting for the first refresh"
        self._selected_note = ""
        self._refused: tuple[str, str] | None = None  # (host, why Enter opened nothing)
        self._shown = 0
        self.last_action = ""
        self.title_text = title
        self.marked: list[str] = []  # hosts marked with space: K cleans up each of them
        self.actions = FleetActions(self)

    def compose(self) -> ComposeResult:
        yield Static("waiting for the first refresh…", id="summary")
        yield Input(placeholder="filter: name, label or state", id="filter")
        yield FleetTable(id="fleet")
        if self.history_source is not None:
            yield FleetHistoryView("", id="history")
        yield Static("", id="selected", markup=False)
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        if self.keys:
            self.set_keymap(self.keys)
        self.query_one(FleetTable).focus()
        if self.rows:
            self._draw()
        self.poll_fleet()

    @console_worker("fleet", pane="fleet", what="refresh the fleet")
    async def poll_fleet(self) -> None:
        """Refresh, post, wait, again: never two refreshes at once (re-armed after each)."""
        while True:
            started = time.monotonic()
            rows = await self.collector.refresh()
            self.post_message(FleetRows(rows, time.monotonic() - started))
            await asyncio.sleep(self.collector.next_interval_s(self.interval_s))

    def on_fleet_rows(self, message: FleetRows) -> None:
        self.rows = message.rows
        self.refreshes += 1
        self._refresh_note = f"refreshed in {message.took_s:.2f} s"
        self._draw()

    # -- the selected host's history (Prometheus rows) ----------------------------------

    def _follow_history(self, row: FleetRow | None) -> None:
        """Fetch the selected host's history now, then every history_every_s."""
        if self.history_source is None:
            return
        shown = None if row is None else (row.host, row.source)
        if shown == self._history_row:
            return
        self._history_row = shown
        host = row.host if row is not None and row.source == "prometheus" else None
        self._history_host = host
        self.history = None
        name = "" if row is None else source_text(row.host)
        note = f"{name}: history only for Prometheus rows (not {row.source})" if row else ""
        self._draw_history(note if host is None else f"{name}: fetching history…")
        if host is not None:
            self.poll_history(host)  # replaces the previous host's worker (exclusive)
        else:
            self.workers.cancel_group(self, "fleet-history")

    @console_worker("fleet-history", pane="fleet", what=FETCH_HISTORY)
    async def poll_history(self, host: str) -> None:
        """One host's history, again and again (a new selection replaces this worker)."""
        assert self.history_source is not None
        while True:
            self.post_message(FleetHistoryFetched(await self.history_source.fetch(host)))
            await asyncio.sleep(self.history_every_s)

    def on_fleet_history_fetched(self, message: FleetHistoryFetched) -> None:
        if message.history.host == self._history_host:
            self.history = message.history
            self._draw_history()

    def _draw_history(self, note: str = "") -> None:
        if self.history_source is not None and self.is_running:
            for view in self.query(FleetHistoryView):  # none while the app closes
                view.show(self.history, self.size.width, note)

    def on_worker_failed(self, message: WorkerFailed) -> None:
        if message.what == FETCH_HISTORY:  # the history's own line says it; rows go on
            self.history = None
            self._draw_history(f"[red]history failed: {source_text(message.reason)}[/]")
            return
        if message.user_action:  # an action the operator asked for: refused or failed
            text = printable(f"{message.what}: {message.reason}")
            self.notify(text, severity="error", markup=False)
            return
        self.query_one("#status", Static).update(
            f"[red]fleet refresh failed: {source_text(message.reason)}[/]"
        )

    def visible_rows(self) -> list[FleetRow]:
        shown = [row for row in self.rows if matches(row, self.filter_text)]
        return grouped(sorted_rows(shown, self.sort_column, self.descending), self.rows)

    def _draw(self) -> None:
        # Messages still queued while the console closes find its widgets gone: nothing to draw.
        with contextlib.suppress(NoMatches):
            self._draw_table()
        self.refresh_bindings()

    def _draw_table(self) -> None:
        visible = self.visible_rows()
        self.query_one("#summary", Static).update(
            summarize(self.rows).line(compact=self.size.width < 100)
        )
        self._shown = len(visible)
        self.query_one(FleetTable).show(visible, self.size.width)
        self._draw_status()

    def _draw_status(self) -> None:
        with contextlib.suppress(NoMatches):  # closing: see _draw
            self._draw_status_lines()

    def _draw_status_lines(self) -> None:
        status = [
            *(f"[red]{source_text(problem)}[/]" for problem in self.collector.problems),
            self._refresh_note,
            f"sort {self.sort_column}{' desc' if self.descending else ''}",
        ]
        if self.filter_text:
            status.append(f"filter {self.filter_text!r}: {self._shown} shown")
        if self.marked:
            status.append(f"marked {len(self.marked)}: {source_text(', '.join(self.marked))}")
        self.query_one("#status", Static).update(" · ".join(status))
        note = self._selected_note
        if self._refused is not None and note.startswith(f"{source_text(self._refused[0])}:"):
            note += f" · {self._refused[1]}"
        self.query_one("#selected", Static).update(note)

    def on_resize(self) -> None:
        if self.rows:
            self._draw()
        if self.history is not None:
            self._draw_history()

    # -- keys ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer offers R/X/K/b only where they can run on the highlighted row."""
        return self.row_refusal(action, parameters) is None

    def row_refusal(self, action: str, parameters: tuple[object, ...]) -> str | None:
        return self.actions.refusal(action, parameters)

    def on_key(self, event: events.Key) -> None:
        """A key the footer does not offer on this row says why in one line."""
        try:
            bindings = self._bindings.get_bindings_for_key(event.key)
        except NoBinding:
            return
        for binding in bindings:
            name, _, rest = binding.action.partition("(")
            parameters = tuple(p.strip(" '\")") for p in rest.split(",") if p.strip(" )"))
            why = self.row_refusal(name, parameters)
            if why is None:
                continue
            event.stop()
            if "read-only" in why:  # the action's own path refuses it, audited
                getattr(self, f"action_{name}")(*parameters)
            else:
                self.notify(why, severity="warning", markup=False)
            return

    def action_open_host(self) -> None:
        host = self.query_one(FleetTable).selected_host()
        if host is not None:
            self._open(host)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        table = event.data_table
        host = table.host_at(event.cursor_row) if isinstance(table, FleetTable) else None
        if host is not None:
            self._open(host)

    def _open(self, host: str) -> None:
        """Leave for the host's console, if it has a profile (a Prometheus-only host has none);
        a deployment's group row opens its head's (the host with the API server)."""
        host = head_host(self.rows, host) or host
        if self.collector.probe(host) is None:
            self._refused = (host, "no profile for this host, so no console to open")
            self._draw_status()
            return
        self.exit(host)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The selected host's route (hop chain) and its error, under the table."""
        if not self.screen_stack:  # closing: a highlight queued before the last screen went
            return
        table = event.data_table
        host = table.host_at(event.cursor_row) if isinstance(table, FleetTable) else None
        row = next((r for r in self.rows if r.host == host), None)
        self._selected_note = (
            "" if row is None else source_text(f"{row.host}: {row.route or row.source}")
        )
        if row is not None and row.error:
            self._selected_note += f" · {source_text(row.error)}"
        self._draw_status()
        self._follow_history(row)
        self.refresh_bindings()  # the footer's R/X/K/b follow the row

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        self.descending = not self.descending if column == self.sort_column else False
        self.sort_column = column
        self._draw()

    def action_sort_next(self) -> None:
        names = list(SORT_KEYS)
        self.sort_column = names[(names.index(self.sort_column) + 1) % len(names)]
        self._draw()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self._draw()

    def action_filter(self) -> None:
        field = self.query_one("#filter", Input)
        field.add_class("shown")
        field.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._draw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(FleetTable).focus()

    def action_clear_filter(self) -> None:
        field = self.query_one("#filter", Input)
        field.value = ""
        field.remove_class("shown")
        self.filter_text = ""
        self.query_one(FleetTable).focus()
        self._draw()

    def action_quit_fleet(self) -> None:
        self.exit(None)

    def action_help(self) -> None:
        """`?`: the Fleet's keys (as remapped), then the dialogs'; none of the console's."""
        self.push_screen(
            HelpScreen(COMMANDS, effective_keys(self.keys), here=("fleet",), scopes=FLEET_SCOPES)
        )

    def action_export_summary(self) -> None:
        """The rows on screen as one Markdown file in the current folder (never overwrites)."""
        from tui.summary.export import export_summary

        if not self.rows:
            self.notify("no rows yet: nothing to export", markup=False)
            return
        title = self.title_text or "fleet"
        try:
            path = export_summary(fleet_markdown(self.rows, title), f"fleet-{title}")
        except ServedeckError as error:
            append_audit("summary.export_failed", "fleet", {"error": str(error)})
            self.notify(f"fleet summary not written: {error}", severity="error", markup=False)
            return
        append_audit("summary.export", "fleet", {"path": str(path), "hosts": len(self.rows)})
        self.last_action = f"wrote {path}"
        self.notify(f"fleet summary written to {path}", markup=False)

    def action_fleet_service(self, verb: str) -> None:
        self.actions.service(verb)

    def action_fleet_bench(self) -> None:
        self.actions.bench()

    def action_toggle_mark(self) -> None:
        """Mark or unmark the highlighted host; K then acts on every marked host."""
        host = self.query_one(FleetTable).selected_host()
        if host is None:
            return
        if host in self.marked:
            self.marked.remove(host)
        else:
            self.marked.append(host)
        self._draw_status()

    def action_fleet_cleanup(self) -> None:
        marked, self.marked = self.marked, []
        if marked:
            self._draw_status()
        self.actions.cleanup(marked)

    def on_fleet_planned(self, message: FleetPlanned) -> None:
        self.actions.confirm(message.plan)

    def on_fleet_action_done(self, message: FleetActionDone) -> None:
        self.last_action = message.text
        text = printable(message.text)
        self.notify(text, severity="information" if message.ok else "error", markup=False)
