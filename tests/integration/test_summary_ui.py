"""The console's summary preview: `s` collects and shows the Markdown, `e` exports it."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.widgets import Markdown

from tests.support.summary_helpers import demo_deck
from tui.app import ServedeckApp
from tui.core import paths
from tui.screens.summary import SummaryScreen
from tui.sim.box import SimBox, SimServerOptions
from widgets.summary_view import SummaryView

Factory = Callable[..., SimBox]


async def test_s_previews_the_summary_and_e_exports_it(sim_box_factory: Factory) -> None:
    box = sim_box_factory(SimServerOptions(log_interval_s=30.0), load_seconds=2.0)
    box.start()
    assert box.wait_until_active(timeout_s=90) == "active"
    deck = demo_deck(box)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("s")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            await pilot.pause(0.2)
            screen = app.screen
            if isinstance(screen, SummaryScreen) and screen.query_one(SummaryView).markdown:
                break
        view = app.screen.query_one(SummaryView)
        assert view.markdown.startswith("# State summary: demo on simulator")
        # The text is set before Markdown.update has mounted its blocks (a busy machine
        # takes a while over a long document): wait for the tables to be drawn.
        while not app.screen.query_one(Markdown).query("MarkdownTable"):
            assert time.monotonic() < deadline, "the summary's tables were never drawn"
            await pilot.pause(0.2)
        await pilot.press("e")
        await pilot.pause(0.2)
        written = list((paths.data_dir() / "summaries").glob("summary-demo-*.md"))
        assert len(written) == 1 and written[0].read_text() == view.markdown
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, SummaryScreen)
