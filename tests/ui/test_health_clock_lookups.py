"""The connection clock ticks every second for the console's whole life: a tick finds the
header it may redraw without searching the DOM (an app-wide query walks every widget)."""

from __future__ import annotations

from typing import Any

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import Profile
from widgets.header_bar import HeaderBar


async def test_health_clock_ticks_and_renders_search_the_dom_once() -> None:
    profile = Profile(name="local")
    app = ServedeckApp(profile, open_deck(profile))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        searched: list[object] = []
        query_one = app.query_one

        def counted(selector: Any, *args: Any, **kwargs: Any) -> Any:
            searched.append(selector)
            return query_one(selector, *args, **kwargs)

        app.query_one = counted  # type: ignore[method-assign]
        for _ in range(30):
            app.sources._tick()
            app.sources.render()
        header = app.query_one(HeaderBar)
        assert searched.count(HeaderBar) <= 2  # the first lookup (if not yet made) and ours
        assert header.connection_state in {"connected", "connecting"}
