"""The connection clock: a tick finds the header it may redraw without searching the DOM (an
app-wide query walks every widget), and on a local host with nothing failing it does not tick."""

from __future__ import annotations

from typing import Any

import pytest

from tui.app import ServedeckApp
from tui.app.console_health import SourceHealthPart
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


async def test_the_clock_sleeps_on_a_local_host_until_a_source_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A local host has no connection to watch: with nothing failing the clock stops waking
    the loop; a failure wakes it (its retry countdown moves), and it sleeps again after."""
    ticks: list[float] = []
    tick = SourceHealthPart._tick
    monkeypatch.setattr(SourceHealthPart, "_tick", lambda part: (ticks.append(1.0), tick(part))[1])
    profile = Profile(name="local")
    app = ServedeckApp(profile, open_deck(profile))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(2.5)  # a tick or two, then asleep
        ticks.clear()
        await pilot.pause(2.5)
        assert ticks == []
        app.sources.set("gpu", "NVML: driver gone", 30.0)
        await pilot.pause(2.5)
        assert len(ticks) >= 2  # awake while the GPU source is failing
        app.sources.set("gpu", None)
        await pilot.pause(1.5)
        ticks.clear()
        await pilot.pause(2.5)
        assert ticks == []
