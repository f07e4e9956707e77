"""The log pane and load strip in a headless app, plus SVG snapshots of three load states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.snapshot_apps.log_pane_app import LogPaneApp
from tui.logs.export import export_lines
from tui.logs.line import Level, LogLine
from widgets.log_pane import LogPane


def _lines(count: int, start: int = 0) -> list[LogLine]:
    return [
        LogLine(
            text=f"INFO 11-29 10:00:00 [x.py:1] line {i}",
            level=Level.ERROR if i % 10 == 0 else Level.INFO,
        )
        for i in range(start, start + count)
    ]


async def test_follow_pauses_on_scroll_up_and_resumes_on_end() -> None:
    app = LogPaneApp("loading")
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(LogPane)
        pane.add_lines(_lines(500))
        await pilot.pause(0.3)
        log = pane.log_view
        assert pane.follow and log.scroll_y == log.max_scroll_y
        log.focus()
        await pilot.press("pageup")
        await pilot.pause()
        assert not pane.follow
        held = log.scroll_y
        pane.add_lines(_lines(100, 500))
        await pilot.pause(0.3)
        assert log.scroll_y == held  # paused: new lines do not move the view
        await pilot.press("end")
        await pilot.pause(0.2)
        assert pane.follow and log.scroll_y == log.max_scroll_y


async def test_follow_survives_the_pane_shrinking() -> None:
    """On the Deck the GPU table appears after the first log lines and squeezes the log;
    Textual's Log only scrolls when already at the end, so without a catch-up on resize
    the view stayed behind for good."""
    app = LogPaneApp("loading")
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(LogPane)
        pane.add_lines(_lines(200))
        await pilot.pause(0.3)
        log = pane.log_view
        assert log.scroll_y == log.max_scroll_y
        pane.styles.height = 8
        await pilot.pause(0.3)
        pane.add_lines(_lines(50, 200))
        await pilot.pause(0.3)
        assert pane.follow and log.scroll_y == log.max_scroll_y > 0


async def test_search_filter_and_bounded_buffer(tmp_path: Path) -> None:
    app = LogPaneApp("loading", max_lines=1000)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(LogPane)
        pane.add_lines(_lines(3000))
        pane.flush()
        await pilot.pause()
        assert len(pane.buffer) == 1000 and pane.log_view.line_count <= 1000
        assert pane.buffer[0].text.endswith("line 2000")

        pane.log_view.focus()
        await pilot.press("slash")
        await pilot.press(*"line 25[0-9]9$")
        await pilot.press("enter")
        await pilot.pause()
        first = pane.current_match_line
        assert first is not None and pane.log_view.lines[first].endswith("line 2509")
        await pilot.press("n")
        assert pane.log_view.lines[pane.current_match_line or 0].endswith("line 2519")
        await pilot.press("N", "N")
        assert pane.log_view.lines[pane.current_match_line or 0].endswith("line 2599")

        await pilot.press("f")  # all -> warnings (errors included)
        await pilot.press("f")  # -> errors
        await pilot.pause()
        assert pane.level_filter == "errors"
        assert pane.log_view.line_count == 100
        assert all(line.endswith("0") for line in pane.log_view.lines)

        await pilot.press("t")
        await pilot.pause()
        assert pane.log_view.line_count == 100  # no timestamps on these lines: unchanged


async def test_export_is_redacted(tmp_path: Path) -> None:
    app = LogPaneApp("loading")
    async with app.run_test() as pilot:
        pane = app.query_one(LogPane)
        pane.add_lines([LogLine(text="starting with --api-key sk-abcdefghijklmnopqrstuvwx ok")])
        await pilot.pause()
        target = tmp_path / "log.txt"
        count = export_lines(pane.export_texts(), target)
        text = target.read_text()
        assert count == len(pane.buffer)
        assert "sk-abcdefghij" not in text and "[REDACTED]" in text


def test_textual_stays_out_of_the_core() -> None:
    import subprocess
    import sys

    code = (
        "import sys, tui.serving.unit.service, tui.serving.load.tracker, tui.serving.metrics, tui.serving.readiness, "
        "tui.logs.journal, tui.logs.tail, tui.logs.export;"
        "print(json.dumps('textual' in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json;" + code], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) is False


@pytest.mark.parametrize("name", ["loading", "serving", "failed"])
def test_snapshot(name: str, snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(LogPaneApp(name), terminal_size=(110, 30))
