"""The log pane formats a plain batch in one join and split: the rows it draws must be
the rows the line-by-line reading draws, whatever the batch holds (issue 18)."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.snapshot_apps.log_pane_app import LogPaneApp
from tui.logs.classify import strip_ansi
from tui.logs.line import Level, LogLine
from widgets.log_pane import MAX_SHOWN_CHARS, LogPane

BATCHES = [
    [],
    [LogLine("")],
    [LogLine("one"), LogLine(""), LogLine("two\nlines"), LogLine("\n")],
    [LogLine("\x1b[31mred\x1b[0m"), LogLine("plain", level=Level.ERROR)],
    [LogLine("x" * (MAX_SHOWN_CHARS + 5)), LogLine("short")],
    [LogLine("x" * MAX_SHOWN_CHARS), LogLine("y", level="NOTICE")],
]


def by_line(lines: list[LogLine]) -> list[str]:
    """The rows of the line-by-line reading, filter `all`, no wrap, no times."""
    rows: list[str] = []
    for line in lines:
        text = strip_ansi(line.text)
        if len(text) > MAX_SHOWN_CHARS:
            text = f"{text[:MAX_SHOWN_CHARS]}... [{len(text) - MAX_SHOWN_CHARS} more characters]"
        rows.extend(text.split("\n"))
    return rows


@pytest.mark.parametrize("batch", BATCHES, ids=range(len(BATCHES)))
async def test_batch_rows_are_the_line_by_line_rows(batch: list[LogLine]) -> None:
    app = LogPaneApp("loading")
    async with app.run_test(size=(100, 30)):
        pane = app.query_one(LogPane)
        entries = [dataclasses.astuple(line) for line in batch]  # as the pane queues lines
        assert pane._format(entries) == by_line(batch)
        pane.level_filter = "warnings"
        assert pane._format(entries) == [
            row
            for line in batch
            if line.level in (Level.WARNING, Level.ERROR)
            for row in by_line([line])
        ]
