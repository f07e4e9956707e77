"""Enter on a fleet row opens that host: its model, its GPU count, its state.

The demo fleet's rows are light boxes; Enter starts a full simulated box (real processes,
real HTTP) standing in for the row. A serving Qwen row on 4 GPUs must open a console
showing 4 GPUs, the Qwen unit, serving, never the default 8-GPU Kimi box loading from zero.
"""

from __future__ import annotations

import pytest

from tests.support.screen_text import screen_text
from tui.app import ServedeckApp
from tui.app.fleet_app import FleetApp
from tui.app.fleet_run import _deck_for
from tui.fleet.collector import FleetCollector
from tui.fleet.demo import DemoFleet
from widgets.fleet_table import FleetTable


async def _choose(collector: FleetCollector, host: str) -> str | None:
    """Drive the Fleet pane: wait for rows, put the cursor on `host`, press Enter."""
    app = FleetApp(collector)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(400):
            if app.refreshes and app.query_one(FleetTable).row_count:
                break
            await pilot.pause(0.05)
        hosts = [row.host for row in app.visible_rows()]
        app.query_one(FleetTable).move_cursor(row=hosts.index(host))
        await pilot.pause(0.1)
        await pilot.press("enter")
        await pilot.pause(0.1)
    return app.return_value


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_enter_on_a_serving_qwen_row_opens_that_host(size: tuple[int, int]) -> None:
    fleet = DemoFleet(8)
    collector = FleetCollector(fleet.probes, host_timeout_s=10)
    try:
        box = fleet.boxes[3]
        assert (box.name, box.model, box.gpus, box.kind) == (
            "box-04",
            "Qwen/Qwen3-235B-A22B",
            4,
            "serving",
        )
        assert await _choose(collector, "box-04") == "box-04"
        deck = await _deck_for(collector.probe("box-04"), read_only=False)
        assert deck is not None
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=size) as pilot:
            for _ in range(150):
                await pilot.pause(0.1)
                if app.ready and app.last_gpu is not None and app.last_gpu.available:
                    break
            assert app.ready, "a serving row opened a box that is not serving"
            assert app.last_gpu is not None and app.last_gpu.gpu_count == 4
            text = screen_text(app)
            assert "qwen3-235b-a22b" in text, text
            assert "kimi" not in text.lower(), text
            assert "serving" in text, text
            assert "4 GPUs" in text, text
    finally:
        await collector.close()
        fleet.close()
