"""The Deck states what it knows, as soon as it knows it, on the simulated box (real processes).

After a stop the service line states the leftovers (count and memory) from the first listing
that has them, with K offered; `r` says it is refreshing; the Health pane gives the doctor's real run time (never "n/a");
the Filling column empties once memory is flat.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from tests.support.screen_text import screen_text
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import demo_profile
from tui.screens.confirm_action import ConfirmActionScreen
from widgets.gpu_table import GpuTable
from widgets.service_line import ServiceLine

SIZES = [(80, 24), (120, 36)]


async def _until(
    pilot: Pilot[None], predicate: Callable[[], bool], timeout_s: float, what: str
) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


@pytest.mark.parametrize("size", SIZES)
async def test_refresh_key_says_it_is_refreshing(size: tuple[int, int]) -> None:
    deck = open_deck(demo_profile())
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        before = len(app._notifications)
        await pilot.press("r")
        await pilot.pause(0.1)
        notes = list(app._notifications)[before:]
        assert any("refreshing" in note.message for note in notes), [n.message for n in notes]
        await pilot.press("q")


@pytest.mark.parametrize("size", SIZES)
async def test_health_title_gives_the_doctors_real_duration(size: tuple[int, int]) -> None:
    deck = open_deck(demo_profile())
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=size) as pilot:
        await pilot.press("7")
        title = app.query_one("#health-title", Static)
        await _until(pilot, lambda: "Kernel log" in str(title.render()), 60, "the doctor")
        text = str(title.render())
        assert "n/a" not in text, text
        assert re.search(r"Doctor took \d+(\.\d)? (s|ms)\.", text), text
        await pilot.press("q")


async def test_filling_column_empties_once_memory_is_flat() -> None:
    deck = open_deck(demo_profile(), demo_autostart=True, demo_load_s=6.0)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(200, 50)) as pilot:  # wide: the full layout has Filling
        table = app.query_one(GpuTable)

        def filling() -> list[str]:
            keys = [key for key in table.row_keys if key.startswith("gpu-")]
            return [table.cell(key, "fill") for key in keys]

        await _until(pilot, lambda: any("G/s" in cell for cell in filling()), 60, "filling")
        await _until(pilot, lambda: app.ready, 60, "ready")
        await pilot.pause(3.0)  # memory has been flat for a few samples
        assert filling() and all(cell == "" for cell in filling()), filling()
        await pilot.press("q")


@pytest.mark.parametrize("size", SIZES)
async def test_after_stop_the_deck_states_the_leftovers_from_the_first_listing(
    size: tuple[int, int],
) -> None:
    deck = open_deck(demo_profile(), demo_autostart=True, demo_load_s=5.0)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=size) as pilot:
        await _until(pilot, lambda: app.ready, 90, "ready")
        await pilot.press("X")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 10, "ask")
        await pilot.press("shift+tab", "enter")
        await _until(
            pilot,
            lambda: app.unit_state is not None and not app.unit_state.is_active,
            30,
            "the unit to stop",
        )
        # The stop lists the processes at once (not the recorder's 10 s round, nor an alert
        # 30 s later); the Deck line is drawn with the listing that first has the leftovers.
        await _until(
            pilot,
            lambda: (
                app.procs.listing is not None and len(app.procs.listing.of_class("leftover")) == 2
            ),
            15,
            "the listing with two leftovers",
        )
        line = str(app.query_one(ServiceLine).render())
        assert re.search(r"2 leftovers hold \d+ GiB: press K", line), line
        await pilot.pause(0.1)
        text = screen_text(app)  # on screen whole, at 80 columns too
        assert re.search(r"2 leftovers hold \d+ GiB: press K", text), text
        assert app.check_action("kill_leftovers", ()) is True
        await pilot.press("q")
