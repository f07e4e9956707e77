"""A flood appended to the service log reaches the pane whole, in order, while the
console drains it a slice per turn and the reader waits beyond a bounded backlog."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.console_support import append_once_following, log_file_console
from tui.app.console_log import LOG_BACKLOG_LINES, LOG_DRAIN_LINES
from widgets.log_pane import LogPane

FLOOD_LINES = 45_000  # over the backlog bound, under the pane's 50,000-line buffer


async def test_a_flood_is_drawn_whole_with_a_bounded_backlog(tmp_path: Path) -> None:
    assert LOG_BACKLOG_LINES < FLOOD_LINES and LOG_DRAIN_LINES < LOG_BACKLOG_LINES
    app, log = log_file_console(tmp_path, "flood")
    texts = [
        f"(APIServer pid=7) {'WARNING' if i % 7 == 0 else 'INFO'} 11-29 10:00:{i % 60:02d} "
        f"[x.py:1] line {i}"
        for i in range(FLOOD_LINES)
    ]
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(LogPane)
        await append_once_following(pilot, app, log, "\n".join(texts) + "\n")
        backlog = 0
        deadline = time.monotonic() + 120  # a loaded machine: generous
        while len(pane.buffer) < FLOOD_LINES and time.monotonic() < deadline:
            backlog = max(backlog, len(app.logs.incoming))
            await pilot.pause(0.01)
        assert [line.text for line in pane.buffer] == texts
        assert backlog <= LOG_BACKLOG_LINES
        assert [line.level for line in list(pane.buffer)[:8]] == ["WARNING"] + ["INFO"] * 6 + [
            "WARNING"
        ]
        await pilot.press("q")
