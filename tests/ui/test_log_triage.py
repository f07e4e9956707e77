"""Log triage at 80x24: the filter and search say what they hide and find (issue item 15).

The level filter names its state and never leaves a blank view without saying so;
search shows a match count, "no match", and a bad regex is an error; toggling wrap
or the filter keeps follow mode; the simulator's load log has real WARNING lines.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.support.screen_text import screen_text
from tests.support.snapshot_apps.log_pane_app import LogPaneApp
from tui.logs.classify import LevelClassifier
from tui.logs.line import Level, LogLine
from tui.sim.box import SimBox
from widgets.log_pane import LogPane

SIZE = (80, 24)


def info_lines(count: int, start: int = 0) -> list[LogLine]:
    return [
        LogLine(f"(APIServer pid=1) INFO 11-29 10:00:00 [x.py:1] line {i}", level=Level.INFO)
        for i in range(start, start + count)
    ]


async def settle(pilot, pane: LogPane) -> None:  # type: ignore[no-untyped-def]
    pane.flush()
    await pilot.pause(0.2)


async def test_a_filter_that_hides_everything_says_so() -> None:
    app = LogPaneApp("loading")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        pane.add_lines(info_lines(40))
        await settle(pilot, pane)
        pane.log_view.focus()
        await pilot.press("f", "f")  # errors only: there are none among these lines
        await settle(pilot, pane)
        assert pane.log_view.line_count == 0
        shown = screen_text(app)
        assert "errors only" in shown and "none of" in shown, shown
        await pilot.press("f")  # back to all: the note goes
        await settle(pilot, pane)
        assert pane.status_text() == "" and pane.log_view.line_count >= 40


async def test_the_filter_names_its_state_and_counts() -> None:
    app = LogPaneApp("loading")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        warning = LogLine(
            "(Worker_TP0 pid=2) WARNING 11-29 10:00:01 [y.py:2] slow", level=Level.WARNING
        )
        pane.add_lines([*info_lines(10), warning, *info_lines(5, 10)])
        await settle(pilot, pane)
        pane.log_view.focus()
        await pilot.press("f")
        await settle(pilot, pane)
        assert "warnings and errors: 1 of" in screen_text(app), screen_text(app)


async def test_search_counts_says_no_match_and_rejects_a_bad_regex() -> None:
    app = LogPaneApp("loading")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        pane.add_lines(info_lines(30))
        await settle(pilot, pane)
        assert pane.search(r"line 1\d$") == 10
        await pilot.pause(0.1)
        assert "1/10 matches" in screen_text(app), screen_text(app)
        assert pane.search("no such text") == 0
        await pilot.pause(0.1)
        assert "no such text: no match" in screen_text(app)
        assert pane.search("line (") == 0
        await pilot.pause(0.1)
        shown = screen_text(app)
        assert "bad regex" in shown and pane.search_error, shown
        assert pane.current_match_line is None


async def until(pilot, predicate: Callable[[], bool], what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(100):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_toggling_wrap_or_filter_keeps_follow_mode() -> None:
    app = LogPaneApp("loading")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        log = pane.log_view
        long_tail = " and a long tail that needs wrapping at eighty columns" * 2
        pane.add_lines(LogLine(line.text + long_tail, level=line.level) for line in info_lines(300))
        await settle(pilot, pane)
        log.focus()
        assert pane.follow and log.scroll_y == log.max_scroll_y
        for key in ("w", "f", "f", "f", "w"):
            await pilot.press(key)
            await settle(pilot, pane)
            assert pane.follow, f"{key} lost follow mode"
            pane.add_lines(info_lines(20, 1000))
            await settle(pilot, pane)
            await until(pilot, lambda: log.scroll_y == log.max_scroll_y, f"the end after {key}")


def test_the_simulated_load_logs_real_warnings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with SimBox(tmp_path / "box", load_seconds=2.0) as box:
        box.start()
        assert box.wait_until_active(90) == "active"
        text = box.log_path.read_text()
    classifier = LevelClassifier()
    warnings = [line for line in text.splitlines() if classifier.classify(line) == Level.WARNING]
    assert any("ulimit" in line for line in warnings), warnings
    assert any("Custom allreduce is disabled" in line for line in warnings), warnings
    assert any("Using default MoE config" in line for line in warnings), warnings
    errors = [line for line in text.splitlines() if classifier.classify(line) == Level.ERROR]
    assert not errors, errors  # a healthy load: the warnings are not taken for failures
