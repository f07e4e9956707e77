"""The footer's K is true from the start: no "Clean up" offered when nothing is left over.

A new console used to offer K on the Deck until the Processes pane had been opened once
(no listing yet meant "maybe"), so a healthy serving box showed "K Clean up". The first
GPU sample now brings a process listing. On the simulator (real processes).
"""

from __future__ import annotations

import pytest

from tests.ui.test_offered_keys import demo_deck, footer_keys, until
from tui.app import ServedeckApp


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_fresh_console_offers_no_cleanup_without_leftovers(size: tuple[int, int]) -> None:
    with demo_deck(serving=True) as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: app.gpus.last_good is not None, 30, "a GPU sample")
            assert app.active_tab() == "deck"
            await until(pilot, lambda: app.procs.listing is not None, 30, "a process listing")
            await pilot.pause(0.2)
            keys = footer_keys(app)
            assert "K" not in keys, f"K offered with no leftovers: {keys}"
            assert app.active_tab() == "deck", "the listing came without opening Processes"
