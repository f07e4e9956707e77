"""Table rows are keyed by their place, never by a name that can repeat.

Seen against a real data dir: the console ended at start in Textual's DuplicateKey
('r1' already exists) because the bench history held two runs with one run id (a history
file copied between machines, or two appended). Each table that keyed its rows by a run
id, a load label, a layout label or a host name had the same fault: two such rows crashed
the pane or silently dropped one.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from tests.support.canned_host import canned_deck
from tests.support.waiting import pilot_wait
from tests.ui.test_bench_view import RUNS, BenchViewApp
from tests.ui.test_fleet_table_fits import ROWS
from tests.ui.test_header_wording import KIMI
from tests.ui.test_plan_view import minimax_plan
from tui.app import ServedeckApp
from tui.bench.history import append_result, history_path
from tui.plan import Layout
from widgets.bench_view import BenchView
from widgets.fleet_table import FleetTable
from widgets.plan_view import PlanView


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_history_that_repeats_run_ids_opens_the_console(size: tuple[int, int]) -> None:
    deck = canned_deck(KIMI)
    runs = [replace(run, context=replace(run.context, host=deck.host_label)) for run in RUNS]
    repeated = [replace(run, run_id="r1") for run in runs] + [runs[0], runs[0]]
    for run in repeated:  # the data dir is this test's own (tests/conftest.py)
        append_result(run)
    assert history_path().read_text().count('"run_id": "r1"') == len(runs)
    app = ServedeckApp(KIMI, deck)
    async with app.run_test(size=size) as pilot:
        history = app.query_one("#bench-history", DataTable)
        await pilot_wait(
            pilot,
            lambda: history.row_count == len(repeated),
            lambda: f"every run of the history drawn, {history.row_count} of {len(repeated)}",
            timeout_s=30.0,
        )
        assert app.is_running


async def test_two_levels_at_one_load_are_two_rows() -> None:
    app = BenchViewApp()
    async with app.run_test(size=(120, 50)) as pilot:
        levels = RUNS[0].levels
        app.query_one(BenchView).show_result(replace(RUNS[0], levels=(*levels, levels[1])))
        await pilot.pause()
        table = app.query_one("#bench-levels", DataTable)
        assert table.row_count == len(levels) + 1
        assert [str(table.get_row_at(row)[0]) for row in range(table.row_count)][-1] == "c=8"


class _PlanApp(App[None]):
    def compose(self) -> ComposeResult:
        plan = minimax_plan()
        yield PlanView(replace(plan, layouts=(*plan.layouts, plan.layouts[0])), Layout(4))


async def test_a_plan_that_lists_one_layout_twice_draws_both() -> None:
    app = _PlanApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        view = app.query_one(PlanView)
        table = app.query_one(DataTable)
        assert table.row_count == len(minimax_plan().layouts) + 1
        table.move_cursor(row=table.row_count - 1)
        await pilot.pause()
        assert view.detail_text.startswith(f"{minimax_plan().layouts[0].layout.label}:")


class _FleetApp(App[None]):
    def compose(self) -> ComposeResult:
        yield FleetTable()

    def on_mount(self) -> None:
        self.query_one(FleetTable).show([*ROWS, ROWS[0]], self.size.width)


async def test_a_host_listed_twice_is_two_rows_and_each_names_its_host() -> None:
    app = _FleetApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        table = app.query_one(FleetTable)
        assert table.row_count == len(ROWS) + 1
        table.move_cursor(row=len(ROWS))
        await pilot.pause()
        assert table.selected_host() == ROWS[0].host
        assert table.row_of(ROWS[1].host) == 1
