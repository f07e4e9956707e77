"""A log flood still reaches the pane when the event loop runs its timers late.

Textual's one-shot timer reads the clock as its task starts and again just after; if more
than its delay passed in between, it skips its only tick and never calls back. On a loaded
machine (the process descheduled, another thread holding the interpreter) that happens to
the console's 1 ms flood drain now and then: the drain is armed again only by itself, so
the pane stopped following the log for good and the source waited on its full backlog.

The timers' clock is slowed here (each read takes 2 ms, as if the process were
descheduled there) so the late start happens every time instead of rarely. Everything
else is real: the file, its follower, the console's drain and the pane.
"""

from __future__ import annotations

import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import textual.timer
from textual import _time
from textual.app import App, ComposeResult

from tests.support.console_support import append_once_following, log_file_console
from tui.app.console_log import LOG_DRAIN_LINES
from tui.logs.line import LogLine
from widgets.log_pane import LogPane
from widgets.sure_timer import set_sure_timer

FLOOD_LINES = 3 * LOG_DRAIN_LINES  # a flood: the 1 ms drain, not the 0.1 s trickle one
CLOCK_READ_S = 0.002  # longer than the flood drain's delay


@pytest.fixture
def late_timers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every clock read of Textual's timers takes CLOCK_READ_S (only the timers' clock)."""

    def slow_clock() -> float:
        time.sleep(CLOCK_READ_S)
        return _time.get_time()

    monkeypatch.setattr(textual.timer, "_time", types.SimpleNamespace(get_time=slow_clock))
    yield


class _Timers(App[None]):
    def on_mount(self) -> None:
        self.fired: list[str] = []
        set_sure_timer(self, 0.001, lambda: self.fired.append("sure"), name="sure")


async def test_a_sure_timer_fires_when_its_task_starts_late(late_timers: None) -> None:
    app = _Timers()
    async with app.run_test() as pilot:
        deadline = time.monotonic() + 30
        while not app.fired and time.monotonic() < deadline:
            await pilot.pause(0.01)
        assert app.fired == ["sure"]


class _Pane(App[None]):
    def compose(self) -> ComposeResult:
        yield LogPane(flush_interval_s=0.001)


async def test_the_pane_draws_when_its_flush_timer_starts_late(late_timers: None) -> None:
    app = _Pane()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(LogPane)
        pane.add_lines([LogLine(f"INFO line {i}") for i in range(100)])
        deadline = time.monotonic() + 30
        while pane.log_view.line_count < 100 and time.monotonic() < deadline:
            await pilot.pause(0.01)
        assert pane.log_view.line_count == 100
        pane.add_lines([LogLine("INFO one more")])  # the next flush is armed again
        deadline = time.monotonic() + 30
        while pane.log_view.line_count < 101 and time.monotonic() < deadline:
            await pilot.pause(0.01)
        assert pane.log_view.line_count == 101


async def test_a_flood_is_drawn_whole_when_the_drain_timer_starts_late(
    tmp_path: Path, late_timers: None
) -> None:
    app, log = log_file_console(tmp_path, "late")
    texts = [f"(APIServer pid=7) INFO 11-29 10:00:00 [x.py:1] line {i}" for i in range(FLOOD_LINES)]
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(LogPane)
        await append_once_following(pilot, app, log, "\n".join(texts) + "\n")
        deadline = time.monotonic() + 60  # a loaded machine: generous
        while len(pane.buffer) < FLOOD_LINES and time.monotonic() < deadline:
            await pilot.pause(0.02)
        assert [line.text for line in pane.buffer] == texts
        assert not app.logs.incoming
        await pilot.press("q")
