"""The log pane shows a read's columns (a LineBatch) as it shows the same LogLines: the same
buffer, the same rows, the same counts under a level filter, and the same redraw."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tests.support.log_samples import TRICKY_LEVEL_LINES, captured_lines
from tui.logs.classify import LevelClassifier
from tui.logs.line import LineBatch
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


class SlowTickPane(App[None]):
    def compose(self) -> ComposeResult:
        yield LogPane(max_lines=50_000, flush_interval_s=30.0)


async def test_a_flood_is_drawn_chunk_by_chunk_without_waiting_for_the_tick() -> None:
    """A flood (a chunk's worth queued) is drawn from the next turns on, not at the flush
    tick: in a tick's time a flood outgrew the buffer, and its oldest lines went undrawn.
    A trickle still waits for the tick (here 30 s: it is not drawn in this test)."""
    classifier = LevelClassifier()
    texts = [f"INFO line {i}" for i in range(40_000)]
    async with SlowTickPane().run_test(size=(100, 30)) as pilot:
        pane = pilot.app.query_one(LogPane)
        drawn: list[int] = []
        original = pane._format
        pane._format = lambda lines: drawn.append(len(lines)) or original(lines)  # type: ignore[method-assign]
        for start in range(0, len(texts), 2000):  # as the console drains: 2,000 a turn
            chunk = texts[start : start + 2000]
            pane.add_lines(LineBatch(chunk, classifier.classify_many(chunk), 1.8e9, "f"))
            await pilot.pause()
        for _ in range(200):
            if not pane._pending:
                break
            await pilot.pause(0.01)
        assert sum(drawn) == 40_000 and max(drawn) <= 2000
        assert list(pane.buffer)[-1].text == "INFO line 39999"
        pane.add_lines(LineBatch(["a trickle"], ["info"], 1.8e9, "f"))
        await pilot.pause(0.1)
        assert sum(drawn) == 40_000 and pane._pending  # waits for the tick
