"""The fleet console as it closes: a message still queued for a widget being torn down."""

from __future__ import annotations

from textual.widgets import DataTable

from tests.support.waiting import pilot_wait
from tui.app.fleet_app import FleetApp
from tui.fleet.collector import FleetCollector
from tui.fleet.demo import DemoFleet
from tui.fleet.feed import FleetFeed
from widgets.fleet_table import FleetTable


async def test_a_row_highlight_after_the_status_line_is_gone_is_no_crash() -> None:
    """Seen at exit: a RowHighlighted handled after the status line was removed raised
    NoMatches, and the console ended in a traceback."""
    demo = DemoFleet(2)
    feed = FleetFeed(collector=FleetCollector(demo.probes, host_timeout_s=10))
    app = FleetApp(feed, interval_s=0.5)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            table = app.query_one(FleetTable)
            await pilot_wait(pilot, lambda: table.row_count == 2, "the two demo rows")
            await app.query_one("#status").remove()
            await app.query_one("#selected").remove()
            row_key = next(iter(table.rows))
            table.post_message(DataTable.RowHighlighted(table, 0, row_key))
            await pilot.pause(0.3)
            assert app.is_running
    finally:
        await feed.close()
        demo.close()


async def test_a_row_highlight_after_the_last_screen_went_is_no_crash() -> None:
    """Seen in a fresh-clone run: a RowHighlighted still queued when the last screen was
    popped at exit raised ScreenStackError ("No screens on stack") from refresh_bindings."""
    demo = DemoFleet(2)
    feed = FleetFeed(collector=FleetCollector(demo.probes, host_timeout_s=10))
    app = FleetApp(feed, interval_s=0.5)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            table = app.query_one(FleetTable)
            await pilot_wait(pilot, lambda: table.row_count == 2, "the two demo rows")
            row_key = next(iter(table.rows))
        assert not app.screen_stack  # the app has ended: its screens are gone
        app.on_data_table_row_highlighted(DataTable.RowHighlighted(table, 0, row_key))
    finally:
        await feed.close()
        demo.close()
