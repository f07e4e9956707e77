"""The Fleet pane: every host of a group on one screen; Enter opens one host's full Deck.

The collector (tui.fleet.collector) owns one Deck per host and outlives this app:
`run_fleet_console` runs the fleet app, and when a host is chosen runs the console
(ServedeckApp) on a borrowed view of that host's Deck in the same event loop, so the
host's SSH connection is reused, not reopened; quitting that console returns here.
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
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.core.formatting import printable
from tui.core.keymap import COMMANDS, FLEET_SCOPES, effective_keys
from tui.deck import Deck
from tui.fleet.actions import (
    CleanupPlan,
    ServicePlan,
    plan_cleanup,
    plan_service,
    run_cleanup,
    run_service,
)
from tui.fleet.bench_action import BenchPlan, bench_line, plan_bench, run_bench_on_host
from tui.fleet.collector import DeckProbe, FleetCollector, HostProbe, borrow_deck
from tui.fleet.feed import FleetFeed, FleetRowSource
from tui.fleet.history import HostHistory
from tui.fleet.model import FleetRow
from tui.fleet.summary import fleet_markdown
from tui.fleet.view import SORT_KEYS, matches, sorted_rows, summarize
from tui.offered import FLEET_ROW_ACTIONS, fleet_refusal
from tui.procs.text import report_lines
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.confirm_bench import ConfirmBenchScreen
from tui.screens.help import HelpScreen
from tui.screens.kill_confirm import KillConfirmation, KillConfirmScreen
from widgets.fleet_history import FleetHistoryView
from widgets.fleet_table import FleetTable
from widgets.footer import Footer
from widgets.keys import bindings_for

if TYPE_CHECKING:  # httpx is imported only when a Prometheus source is made
    from tui.fleet.prom_history import PrometheusHistory
    from tui.fleet.prometheus import PromFleetConfig

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


@dataclass
class FleetPlanned(Message):
    """A fleet action is planned (host re-read): the app asks the operator now."""

    plan: ServicePlan | CleanupPlan | BenchPlan


@dataclass
class FleetActionDone(Message):
    """What a confirmed fleet action did, in one line (also in the audit log)."""

    host: str
    text: str
    ok: bool


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
        return sorted_rows(shown, self.sort_column, self.descending)

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
        """Why a row action cannot run on the highlighted row (K with marks: it can)."""
        if action not in FLEET_ROW_ACTIONS or (action == "fleet_cleanup" and self.marked):
            return None
        try:
            host = self.query_one(FleetTable).selected_host()
        except NoMatches:
            return None
        row = next((r for r in self.rows if r.host == host), None)
        probe = self.collector.probe(host) if host is not None else None
        kind = "deck" if isinstance(probe, DeckProbe) else "prometheus" if probe is None else "demo"
        return fleet_refusal(
            action,
            parameters,
            host=host,
            reachable=row is not None and row.reachable,
            kind=kind,
            read_only=isinstance(probe, DeckProbe) and probe.deck.profile.read_only,
        )

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
        if event.row_key.value is not None:
            self._open(str(event.row_key.value))

    def _open(self, host: str) -> None:
        """Leave for the host's console, if it has a profile (a Prometheus-only host has none)."""
        if self.collector.probe(host) is None:
            self._refused = (host, "no profile for this host, so no console to open")
            self._draw_status()
            return
        self.exit(host)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The selected host's route (hop chain) and its error, under the table."""
        row = next((r for r in self.rows if r.host == event.row_key.value), None)
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

    # -- actions on the selected host: planned, confirmed, re-checked, audited --------------

    def _selected_deck(self, what: str) -> tuple[str, Deck] | None:
        host = self.query_one(FleetTable).selected_host()
        if host is None:
            return None
        probe = self.collector.probe(host)
        if not isinstance(probe, DeckProbe):
            self.notify(f"{host}: {what} is not available on a simulated box", markup=False)
            return None
        return host, probe.deck

    def action_fleet_service(self, verb: str) -> None:
        chosen = self._selected_deck(verb)
        if chosen is not None:
            self._plan_service(*chosen, verb)

    def action_fleet_bench(self) -> None:
        chosen = self._selected_deck("a benchmark")
        if chosen is not None:
            self._plan_bench(*chosen)

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
        if self.marked:
            hosts, self.marked = self.marked, []
            self._draw_status()
            chosen = []
            for host in hosts:
                probe = self.collector.probe(host)
                if isinstance(probe, DeckProbe):
                    chosen.append((host, probe.deck))
                else:
                    self.notify(f"{host}: clean up is not available here", markup=False)
            if chosen:
                self._plan_cleanups(chosen)
            return
        picked = self._selected_deck("clean up")
        if picked is not None:
            self._plan_cleanup(*picked)

    @console_worker(
        "fleet-plan",
        pane="fleet",
        what=lambda app, host, deck, verb: f"{verb} on {host}",
        user_action=True,
    )
    async def _plan_service(self, host: str, deck: Deck, verb: str) -> None:
        self.post_message(FleetPlanned(await plan_service(host, deck, verb)))

    @console_worker(
        "fleet-plan",
        pane="fleet",
        what=lambda app, host, deck: f"a benchmark on {host}",
        user_action=True,
    )
    async def _plan_bench(self, host: str, deck: Deck) -> None:
        self.post_message(FleetPlanned(await plan_bench(host, deck)))

    @console_worker(
        "fleet-plan",
        pane="fleet",
        what=lambda app, host, deck: f"clean up leftovers on {host}",
        user_action=True,
    )
    async def _plan_cleanup(self, host: str, deck: Deck) -> None:
        self.post_message(FleetPlanned(await plan_cleanup(host, deck)))

    @console_worker(
        "fleet-plan",
        pane="fleet",
        what=lambda app, chosen: f"clean up leftovers on {len(chosen)} marked hosts",
        user_action=True,
    )
    async def _plan_cleanups(self, chosen: list[tuple[str, Deck]]) -> None:
        """Each marked host planned on its own: one refusal or failure leaves the others."""

        async def plan(host: str, deck: Deck) -> None:
            try:
                self.post_message(FleetPlanned(await plan_cleanup(host, deck)))
            except ServedeckError as error:
                self.post_message(FleetActionDone(host, f"clean up on {host}: {error}", False))

        await asyncio.gather(*(plan(host, deck) for host, deck in chosen))

    def on_fleet_planned(self, message: FleetPlanned) -> None:
        plan = message.plan
        if isinstance(plan, BenchPlan):

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.notify(f"{plan.host}: benchmark started ({plan.workload})", markup=False)
                    self._run_planned(plan, "benchmark")

            self.push_screen(ConfirmBenchScreen(plan), confirmed)
            return
        if isinstance(plan, ServicePlan):

            def answered(yes: bool | None) -> None:
                if yes:
                    self._run_planned(plan, plan.action.verb)

            note = f"Machine {plan.identity.text}: checked again just before acting."
            self.push_screen(ConfirmActionScreen(plan.action, note), answered)
            return
        if not plan.targets:
            refused = f" ({len(plan.refused)} refused)" if plan.refused else ""
            self.notify(f"{plan.host}: no leftover GPU processes to end{refused}", markup=False)
            return

        def killed(answer: KillConfirmation | None) -> None:
            if answer is not None and answer.targets:
                self._run_planned(
                    CleanupPlan(
                        plan.host, plan.host_label, answer.targets, plan.refused, plan.identity
                    ),
                    "clean up",
                )

        self.push_screen(KillConfirmScreen(plan.host_label, plan.targets, timeout_s=15.0), killed)

    @console_worker(
        "fleet-action",
        pane="fleet",
        what=lambda app, plan, verb: f"{verb} on {plan.host}",
        user_action=True,
        exclusive=False,  # marked hosts' confirmed clean-ups run side by side, none cancelled
    )
    async def _run_planned(self, plan: ServicePlan | CleanupPlan | BenchPlan, verb: str) -> None:
        probe = self.collector.probe(plan.host)
        if not isinstance(probe, DeckProbe):
            raise ServedeckError(f"{plan.host}: no longer in the fleet")
        if isinstance(plan, BenchPlan):
            result = await run_bench_on_host(plan, probe.deck, confirmed=True)
            ok = not result.partial and any(level.completed for level in result.levels)
            text = f"{plan.host}: benchmark {plan.preset}: {bench_line(result)}"
            self.post_message(FleetActionDone(plan.host, text, ok))
            return
        if isinstance(plan, ServicePlan):
            outcome = await run_service(plan, probe.deck, confirmed=True)
            text = f"{plan.host}: {verb} {plan.action.unit}: " + (
                "done" if outcome.ok else f"failed (exit {outcome.exit_status}) {outcome.message}"
            )
            self.post_message(FleetActionDone(plan.host, text, outcome.ok))
            return
        report = await run_cleanup(plan, probe.deck)
        lines = report_lines(report)
        self.post_message(
            FleetActionDone(plan.host, f"{plan.host}: " + "; ".join(lines), report.all_ended)
        )

    def on_fleet_action_done(self, message: FleetActionDone) -> None:
        self.last_action = message.text
        text = printable(message.text)
        self.notify(text, severity="information" if message.ok else "error", markup=False)


async def fleet_console(
    collector: FleetRowSource,
    *,
    read_only: bool = False,
    interval_s: float = BASE_INTERVAL_S,
    history: PrometheusHistory | None = None,
    title: str = "",
    keys: Mapping[str, str] | None = None,
) -> int:
    """The fleet, then a host's console, then the fleet again, until the operator quits."""
    from tui.app import ServedeckApp

    rows: list[FleetRow] = []
    while True:
        app = FleetApp(
            collector, rows=rows, interval_s=interval_s, history=history, title=title, keys=keys
        )
        chosen = await app.run_async()
        rows = app.rows
        if not chosen:
            return 0
        probe = collector.probe(chosen)
        deck = await _deck_for(probe, read_only)
        if deck is None:
            continue
        await ServedeckApp(deck.profile, deck).run_async()


async def _deck_for(probe: HostProbe | None, read_only: bool) -> Deck | None:
    """A real host's Deck, borrowed; a light demo box gets a full simulated box of its own
    (with its model and state); an unreachable one opens nothing."""
    if isinstance(probe, DeckProbe):
        return borrow_deck(probe.deck)
    if probe is None:
        return None
    from tui.fleet.demo import DemoProbe, full_demo_deck

    if not isinstance(probe, DemoProbe) or probe.box.kind == "unreachable":
        return None  # nothing to open: the box cannot be reached
    return await asyncio.to_thread(full_demo_deck, probe.box, read_only=read_only)


def run_fleet_console(
    probes: Sequence[HostProbe],
    *,
    host_timeout_s: float = 4.0,
    read_only: bool = False,
    prometheus: PromFleetConfig | None = None,
    title: str = "",
    keys: Mapping[str, str] | None = None,
) -> int:
    """The Fleet pane over SSH probes, a Prometheus server, or both (one row per host).

    `keys` remaps the Fleet's keys by binding id (a group file's [keys] table).
    """

    async def main() -> int:
        collector = FleetCollector(probes, host_timeout_s=host_timeout_s) if probes else None
        feed = FleetFeed(collector=collector)
        if prometheus is not None:
            from tui.fleet.prom_history import PrometheusHistory
            from tui.fleet.prometheus import PrometheusFleet

            feed.prometheus = PrometheusFleet(prometheus)
            feed.history = PrometheusHistory(feed.prometheus)
        try:
            return await fleet_console(
                feed, read_only=read_only, history=feed.history, title=title, keys=keys
            )
        finally:
            await feed.close()

    return asyncio.run(main())
