"""The Fleet's footer offers R/X/K/b only where they can run on the highlighted row; a
refused key says why in one line (Textual's check_action over tui.offered.fleet_refusal)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.screen_text import screen_lines
from tui.app.fleet_app import FleetApp
from tui.fleet.collector import FleetCollector
from tui.fleet.demo import DemoFleet
from tui.offered import fleet_refusal
from widgets.fleet_table import FleetTable

ROW_KEYS = ("Restart", "Stop", "Clean up", "Bench")


@pytest.fixture
async def demo_collector() -> AsyncIterator[FleetCollector]:
    fleet = DemoFleet(8)
    collector = FleetCollector(fleet.probes, host_timeout_s=10)
    try:
        yield collector
    finally:
        await collector.close()
        fleet.close()


async def test_demo_and_unreachable_rows_offer_no_row_action(
    demo_collector: FleetCollector,
) -> None:
    app = FleetApp(demo_collector)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(400):
            if app.refreshes and app.query_one(FleetTable).row_count:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        table = app.query_one(FleetTable)
        for index, expected in ((0, "unreachable"), (3, "fleet demo box")):
            table.move_cursor(row=index)
            await pilot.pause(0.2)
            footer = screen_lines(app)[-1]
            assert "Quit" in footer and not any(key in footer for key in ROW_KEYS), footer
            assert app.check_action("fleet_service", ("restart",)) is False
            for key in ("R", "X", "K", "b"):
                app.clear_notifications()
                await pilot.press(key)
                await pilot.pause(0.1)
                said = [n.message for n in app._notifications]
                assert len(said) == 1 and expected in said[0], (key, said)
                assert "\n" not in said[0]
        assert app.screen is app.screen_stack[0]  # no dialog opened


def test_fleet_refusal_says_why_for_each_kind_of_row() -> None:
    def why(**row: object) -> str | None:
        base: dict[str, object] = {"host": "gpu1", "reachable": True, "kind": "deck"}
        base["read_only"] = False
        return fleet_refusal("fleet_service", ("restart",), **{**base, **row})  # type: ignore[arg-type]

    assert why() is None
    assert why(read_only=True) == "gpu1: read-only: restart is disabled"
    assert "Prometheus" in (why(kind="prometheus") or "")
    assert "unreachable" in (why(reachable=False) or "")
    assert "demo" in (why(kind="demo") or "")
    assert "no host" in (why(host=None) or "")
    assert (
        fleet_refusal("sort_next", (), host=None, reachable=False, kind="demo", read_only=True)
        is None
    )
