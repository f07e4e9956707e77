"""Enter on a fleet row opens that host: its model, its GPU count, its state.

The demo fleet's rows are light boxes; Enter starts a full simulated box (real processes,
real HTTP) standing in for the row. A serving Qwen row on 4 GPUs must open a console
showing 4 GPUs, the Qwen unit, serving, never the default 8-GPU Kimi box loading from zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

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


async def _console_until(pilot: Pilot[Any], done: Callable[[], bool], what: str) -> None:
    """Pause the console until `done()` holds (30 s at most)."""
    for _ in range(300):
        await pilot.pause(0.1)
        if done():
            return
    raise AssertionError(f"the console never showed {what}")


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_loading_row_opens_at_its_own_point_of_the_load(size: tuple[int, int]) -> None:
    """A row 1/6 into a 600 s load opens a box at that shard, not one loading from zero.

    The console's phase, shard, load clock and weights ETA are the row's, within the few
    seconds between the two reads; model and GPU count too.
    """
    fleet = DemoFleet(8)
    box, probe = fleet.boxes[1], fleet.probes[1]
    assert (box.name, box.kind, box.gpus, box.load_s) == ("box-02", "loading", 4, 600.0)
    deck = await _deck_for(probe, read_only=False)
    assert deck is not None
    try:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=size) as pilot:

            def loading_shown() -> bool:
                p, gpu = app.progress, app.last_gpu
                return (
                    p is not None
                    and p.shards_done is not None
                    and p.eta_s is not None
                    and gpu is not None
                    and gpu.available
                )

            await _console_until(pilot, loading_shown, "the load")
            row = await probe.poll()
            shown = app.progress
            assert shown is not None and shown.eta_s is not None and row.eta_s is not None
            assert row.phase == str(shown.phase) == "weights"
            assert row.shards_done is not None and shown.shards_done is not None
            assert abs(row.shards_done - shown.shards_done) <= 1, (row, shown)
            assert row.shards_total == shown.shards_total == box.shards
            assert shown.load_elapsed_s is not None
            assert abs(shown.load_elapsed_s - (row.taken_at_s - box.started_s)) < 5.0, shown
            assert abs(row.eta_s - shown.eta_s) < 10.0, (row.eta_s, shown.eta_s)
            assert app.last_gpu is not None and app.last_gpu.gpu_count == row.gpu_count == 4
            assert app.unit_state is not None and app.unit_state.started_at_s is not None
            assert abs(app.unit_state.started_at_s - box.started_s) < 2.0
            assert "minimax-m2.5" in screen_text(app).lower()
    finally:
        await deck.close()
        fleet.close()


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_serving_row_opens_serving_since_its_load_with_its_traffic(
    size: tuple[int, int],
) -> None:
    """A row serving for an hour opens a box that loaded when the row's did and serves the
    row's traffic: no invented tok/s on the row, the same figures on both."""
    fleet = DemoFleet(8)
    box, probe = fleet.boxes[3], fleet.probes[3]
    assert (box.name, box.kind, box.gpus) == ("box-04", "serving", 4)
    deck = await _deck_for(probe, read_only=False)
    assert deck is not None
    try:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=size) as pilot:

            def serving_shown() -> bool:
                m = app.serving.metrics
                return app.ready and m is not None and m.generation_tokens_per_s is not None

            await _console_until(pilot, serving_shown, "the server's metrics")
            row = await probe.poll()
            shown, metrics = app.progress, app.serving.metrics
            assert shown is not None and metrics is not None
            assert row.phase == str(shown.phase) == "serving"
            assert row.gen_tok_s is not None and metrics.generation_tokens_per_s is not None
            assert abs(row.gen_tok_s - metrics.generation_tokens_per_s) <= 1.0, (row, metrics)
            assert row.running == metrics.running_reqs
            # The load the console read is the row's: begun and ended when the row's did.
            assert shown.timeline and abs(shown.timeline[0].started_at_s - box.started_s) < 5.0
            assert app.unit_state is not None and app.unit_state.started_at_s is not None
            assert abs(app.unit_state.started_at_s - box.started_s) < 2.0
            assert app.last_gpu is not None and app.last_gpu.gpu_count == row.gpu_count == 4
            assert "qwen3-235b-a22b" in screen_text(app).lower()
    finally:
        await deck.close()
        fleet.close()
