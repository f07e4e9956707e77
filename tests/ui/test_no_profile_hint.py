"""Plain `servedeck` (no profile) says what to do instead of an empty console (issue item 19)."""

from __future__ import annotations

from tui.app import ServedeckApp
from tui.core.profile_store import load_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from widgets.log_pane import LogPane
from widgets.service_line import ServiceLine


async def test_plain_servedeck_names_the_ways_in() -> None:
    profile = load_profile(None)  # what `servedeck` with no -p opens
    app = ServedeckApp(profile, Deck(profile, LocalHost()))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        for _ in range(100):
            if any("servedeck demo" in line.text for line in pane.buffer):
                break
            await pilot.pause(0.1)
        log_text = "\n".join(line.text for line in pane.buffer)
        for way in ("servedeck demo", "servedeck profiles init NAME", "servedeck -p NAME"):
            assert way in log_text, log_text
        line = app.query_one(ServiceLine).render()
        shown = str(line)
        assert "servedeck demo" in shown or "demo" in shown, shown
        assert any("servedeck demo" in note.message for note in app._notifications)  # a toast too
        # Everything the service line says fits 80 columns (nothing cut off).
        assert len(shown) <= 78, shown
