"""The log pane shows a read's columns (a LineBatch) as it shows the same LogLines: the same
buffer, the same rows, the same counts under a level filter, and the same redraw."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tests.support.log_samples import TRICKY_LEVEL_LINES, captured_lines
from tui.logs.line import LevelClassifier, LineBatch
from widgets.log_pane import LogPane


class TwoPanes(App[None]):
    def compose(self) -> ComposeResult:
        yield LogPane(max_lines=300, flush_interval_s=0.01, id="lines")
        yield LogPane(max_lines=300, flush_interval_s=0.01, id="batches")


def _batches() -> list[LineBatch]:
    texts = [*TRICKY_LEVEL_LINES, *captured_lines(), "\x1b[31mred ERROR\x1b[0m", "x" * 9000]
    classifier = LevelClassifier()
    return [
        LineBatch(chunk, classifier.classify_many(chunk), 1.8e9 + start, "file:x")
        for start in range(0, len(texts), 97)
        for chunk in [texts[start : start + 97]]
    ]


async def test_batches_and_their_lines_make_the_same_pane() -> None:
    app = TwoPanes()
    batches = _batches()
    async with app.run_test(size=(120, 40)) as pilot:
        by_line, by_batch = app.query_one("#lines", LogPane), app.query_one("#batches", LogPane)
        for batch in batches:
            by_line.add_lines(list(batch))
            by_batch.add_lines(batch)
        total = min(300, sum(map(len, batches)))
        while len(by_batch.buffer) < total or by_batch._pending or by_line._pending:
            await pilot.pause(0.02)
        assert list(by_batch.buffer) == list(by_line.buffer)
        assert by_batch.log_view.lines == by_line.log_view.lines
        for pane in (by_line, by_batch):
            pane.action_cycle_filter()  # warnings and errors
            pane.action_toggle_timestamps()
        await pilot.pause(0.05)
        assert by_batch.status_text() == by_line.status_text()
        assert "filter warnings and errors" in by_batch.status_text()
        assert by_batch.log_view.lines == by_line.log_view.lines
        assert by_batch.export_texts() == by_line.export_texts()
