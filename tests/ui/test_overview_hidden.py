"""The Overview pane is drawn when shown, not while hidden: a Static's update re-lays out the
whole screen, the largest main-thread cost of an idle console on the Deck."""

from __future__ import annotations

import socket
from pathlib import Path

from rich.console import Console

from tests.support.waiting import pilot_wait
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import load_profile_file
from widgets.header_bar import HeaderBar
from widgets.host_overview import HostOverviewView

REPO = Path(__file__).resolve().parents[2]


async def test_the_overview_waits_for_its_pane_and_is_drawn_when_shown() -> None:
    profile = load_profile_file(REPO / "profiles" / "local-vllm.toml")
    app = ServedeckApp(profile, open_deck(profile))
    async with app.run_test(size=(120, 36)) as pilot:
        view = app.query_one(HostOverviewView)
        drawn: list[object] = []
        update = view.update
        view.update = lambda content="", **kw: (drawn.append(content), update(content, **kw))[1]  # type: ignore[method-assign]
        await pilot_wait(
            pilot,
            lambda: app.query_one(HeaderBar).connection_detail == socket.gethostname(),
            "the overview read",
        )
        app.overview.wake()  # a second read while the Deck is shown
        await pilot.pause(0.5)
        assert drawn == []  # read twice on the Deck, never drawn there
        await pilot.press("2")
        await pilot_wait(pilot, lambda: len(drawn) == 1, "the overview drawn on its pane")
        console = Console(width=120)
        with console.capture() as shown:
            console.print(drawn[0])
        assert socket.gethostname() in shown.get()
        app.overview.wake()  # shown: each new read is drawn
        await pilot_wait(pilot, lambda: len(drawn) == 2, "the next read drawn")
