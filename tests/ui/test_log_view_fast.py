"""The pane's LogView writes and draws as Textual's Log does (issue 18): the same rows from
the same writes (line breaks of every kind, empty lines, pruning at max_lines), and each
row drawn as the same segments, with the level colours and a search's marks, whether the
row takes the fast path (printable ASCII) or the stock one (overlapping marks, tabs,
wide characters, a selection)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.widgets import Log

from widgets.log_highlight import LogHighlighter
from widgets.textual_log_copy import LogView, log_rows

BATCHES = [
    [
        "(APIServer pid=1) INFO 11-29 10:00:00 [loggers.py:1] Engine 000: Running: 3 reqs",
        "(Worker pid=2) WARNING 11-29 10:00:01 [utils.py:1] slow step 7",
        "(Worker pid=2) ERROR 11-29 10:00:02 [worker.py:9] RuntimeError: CUDA out of memory",
        "DEBUG a debug line, then CRITICAL and Traceback and a DeprecationWarning",
    ],
    ["", "after an empty line", "", ""],
    ["carriage\rreturn", "form\x0cfeed", "two\nrows", "ends with a break\n", "\nstarts"],
    ["tab\tseparated\tcolumns", "wide \u4e2d\u6587 characters WARNING", "bell \x07 ERROR"],
    ["WARNINGError overlaps", "ValueErrorWarning", "x" * 300 + " ERROR " + "y" * 50],
    [f"line {i} WARN" for i in range(40)],
]
SEARCHES = [None, "error", "warn|error", "e", "a*", "ERROR.*step", "\\d+"]


class TwoLogs(App[None]):
    def compose(self) -> ComposeResult:
        yield Log(id="stock", highlight=True, max_lines=50)
        yield LogView(id="view", highlight=True, max_lines=50)


def _segments(log: Log, y: int, scroll_x: int, width: int) -> list[tuple[str, object]]:
    return [(segment.text, segment.style) for segment in log._render_line(y, scroll_x, width)]


def test_log_rows_match_splitlines() -> None:
    for batch in BATCHES:
        assert log_rows(batch) == [row for line in batch for row in line.splitlines()]
    plain = ["a", "b c", "d"]
    assert log_rows(plain) is plain  # the lines' own strings: no second copy


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab \n\r\x0b\x1c\x85\u2028", max_size=6), max_size=8))
def test_log_rows_match_splitlines_on_any_breaks(batch: list[str]) -> None:
    assert log_rows(batch) == [row for line in batch for row in line.splitlines()]


async def test_rows_and_drawing_match_the_stock_log() -> None:
    app = TwoLogs()
    async with app.run_test(size=(100, 40)) as pilot:
        stock, view = app.query_one("#stock", Log), app.query_one("#view", LogView)
        app.set_focus(None)  # a focused Log is tinted: both drawn alike
        stock_marks, view_marks = LogHighlighter(), LogHighlighter()
        stock.highlighter, view.highlighter = stock_marks, view_marks
        for batch in BATCHES:
            stock.write_lines(batch)
            view.write_lines(iter(batch))  # any iterable, as Log takes
            await pilot.pause()
            assert view.lines == stock.lines
            assert view.line_count == stock.line_count
            for search in SEARCHES:
                pattern = re.compile(search, re.IGNORECASE) if search else None
                stock_marks.search = view_marks.search = pattern
                for y in range(len(view.lines)):
                    for scroll_x, width in ((0, 100), (5, 30), (290, 40)):
                        assert _segments(view, y, scroll_x, width) == _segments(
                            stock, y, scroll_x, width
                        ), (search, view.lines[y])
        assert len(view.lines) == 50  # pruned at max_lines as the stock Log prunes


async def test_scrolling_follows_the_end_as_the_stock_log() -> None:
    app = TwoLogs()
    async with app.run_test(size=(100, 40)) as pilot:
        stock, view = app.query_one("#stock", Log), app.query_one("#view", LogView)
        for start in range(0, 200, 20):
            batch = [f"row {i}" for i in range(start, start + 20)]
            stock.write_lines(batch)
            view.write_lines(batch)
            await pilot.pause()
            assert view.scroll_offset == stock.scroll_offset
            assert view.virtual_size == stock.virtual_size
        stock.scroll_to(y=3, animate=False)
        view.scroll_to(y=3, animate=False)
        await pilot.pause()
        stock.write_lines(["after scrolling up"])
        view.write_lines(["after scrolling up"])
        await pilot.pause()
        assert view.scroll_offset == stock.scroll_offset  # no jump to the end


async def test_a_plain_row_takes_the_fast_path() -> None:
    """The comparison above covers the fast path: a printable ASCII row skips Text."""
    app = TwoLogs()
    async with app.run_test(size=(100, 40)) as pilot:
        view = app.query_one("#view", LogView)
        view.highlighter = LogHighlighter()
        view.write_lines(["plain WARNING row", "tab\trow"])
        await pilot.pause()
        stock_calls: list[int] = []
        original = Log._render_line_strip

        def counted(self: Log, y: int, rich_style: object) -> object:
            stock_calls.append(y)
            return original(self, y, rich_style)  # type: ignore[arg-type]

        setattr(Log, "_render_line_strip", counted)  # noqa: B010
        try:
            view._render_line(0, 0, 100)
            view._render_line(1, 0, 100)
        finally:
            setattr(Log, "_render_line_strip", original)  # noqa: B010
        assert stock_calls == [1]  # only the row with a tab took the stock path
