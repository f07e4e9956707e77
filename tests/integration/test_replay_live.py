"""Replay shows what the live console showed: the GPU table at 5 instants, live and replayed.

The console runs on a real simulator box through a load and into serving; at five
GPU ticks the live GPU table's cells are kept; once recorded, the Deck is replayed
at each of those instants and its GPU table must read the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.support.sim_fixtures import FAST_OPTIONS
from tests.support.summary_helpers import demo_deck
from tui.app import ServedeckApp
from tui.screens.replay import ReplayScreen
from tui.sim.box import SimBox
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable

TIMEOUT_S = 120.0


async def _until(pilot: object, predicate: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)  # type: ignore[attr-defined]


def _cells(pane: GpuPane) -> dict[tuple[str, str], str]:
    table = pane.query_one(GpuTable)
    return {(row, col): table.cell(row, col) for row in table.row_keys for col in table.column_keys}


async def test_replay_matches_the_live_gpu_table_at_five_instants(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory(FAST_OPTIONS, load_seconds=6.0)
    deck = demo_deck(box)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(160, 50)) as pilot:
        await _until(pilot, lambda: app.last_gpu is not None and app.last_gpu.available, "GPUs")
        box.start()
        live: list[tuple[float, dict[tuple[str, str], str]]] = []
        while len(live) < 5:  # one instant every ~1.5 s: through the load and into serving
            seen = app.last_gpu.taken_at_s if app.last_gpu else 0.0
            await pilot.pause(1.2)
            await _until(
                pilot, lambda s=seen: app.last_gpu and app.last_gpu.taken_at_s > s, "a tick"
            )
            assert app.last_gpu is not None
            live.append((app.last_gpu.taken_at_s, _cells(app.query_one("#gpu-pane", GpuPane))))
        assert live[0][1] != live[-1][1]  # the instants differ (memory filled)
        recording = app.record.recording
        assert recording is not None and recording.recorder is not None
        committed = recording.recorder.stats().rows_written
        await _until(
            pilot, lambda: recording.recorder.stats().rows_written > committed + 1, "commit"
        )
        for at_s, cells in live:
            app.record.open_replay(at_s)
            await _until(
                pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.state, "replay"
            )
            screen = app.screen
            assert isinstance(screen, ReplayScreen)
            replayed = _cells(screen.query_one(GpuPane))
            differing = {
                key: (cells[key], replayed.get(key))
                for key in cells
                if replayed.get(key) != cells[key]
            }
            assert not differing, f"at {at_s}: {differing}"
            await pilot.press("escape")
            await _until(
                pilot, lambda: not isinstance(app.screen, ReplayScreen), "back to the Deck"
            )
