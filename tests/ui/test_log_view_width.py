"""The pane's LogView measures a write as Textual's Log does (issue 18): a batch of
printable ASCII by its longest line on the spot, any other batch (tabs, escapes, wide
characters) by the stock thread worker; the widths, and so the scrolling, are the same."""

from __future__ import annotations

import time

from textual.app import App, ComposeResult
from textual.widgets import Log

from widgets.textual_log_copy import LogView

BATCHES = [
    ["plain ascii", "a longer plain ascii line " * 3, ""],
    ["tab\tseparated\tcolumns\t" * 4],
    ["wide \u4e2d\u6587 characters " * 5, "short"],
    ["control \x07 bell and \x1b escape " * 3],
    ["back to plain " * 2],
    ["x" * 300],
]


class TwoLogs(App[None]):
    def compose(self) -> ComposeResult:
        yield Log(id="stock")
        yield LogView(id="view")


async def test_widths_match_the_stock_log_after_every_batch() -> None:
    app = TwoLogs()
    async with app.run_test(size=(80, 30)) as pilot:
        stock, view = app.query_one("#stock", Log), app.query_one("#view", LogView)
        for batch in BATCHES:
            stock.write_lines(batch)
            view.write_lines(batch)
            deadline = time.monotonic() + 30  # the stock Log measures in a thread
            while time.monotonic() < deadline and any(not w.is_finished for w in app.workers):
                await pilot.pause(0.02)
            assert view.virtual_size == stock.virtual_size, batch
        assert view.virtual_size.width == 300
        assert view.lines == stock.lines
