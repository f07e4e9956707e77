"""A flood appended to the service log reaches the pane whole, in order, while the
console drains it a slice per turn and the reader waits beyond a bounded backlog."""

from __future__ import annotations

import time
from pathlib import Path

from tui.app import ServedeckApp
from tui.app.console import LOG_BACKLOG_LINES, LOG_DRAIN_LINES
from tui.core.config import Profile, ServiceConfig
from tui.deck import open_deck
from widgets.log_pane import LogPane

FLOOD_LINES = 45_000  # over the backlog bound, under the pane's 50,000-line buffer


async def test_a_flood_is_drawn_whole_with_a_bounded_backlog(tmp_path: Path) -> None:
    assert LOG_BACKLOG_LINES < FLOOD_LINES and LOG_DRAIN_LINES < LOG_BACKLOG_LINES
    log = tmp_path / "service.log"
    log.write_text("")
    profile = Profile(name="flood", service=ServiceConfig(log_file=str(log)))
    app = ServedeckApp(profile, open_deck(profile))
    texts = [
        f"(APIServer pid=7) {'WARNING' if i % 7 == 0 else 'INFO'} 11-29 10:00:{i % 60:02d} "
        f"[x.py:1] line {i}"
        for i in range(FLOOD_LINES)
    ]
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(LogPane)
        deadline = time.monotonic() + 30
        while not app.workers and time.monotonic() < deadline:  # the follower started
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        with log.open("a") as out:
            out.write("\n".join(texts) + "\n")
        backlog = 0
        deadline = time.monotonic() + 120  # a loaded machine: generous
        while len(pane.buffer) < FLOOD_LINES and time.monotonic() < deadline:
            backlog = max(backlog, len(app._incoming_lines))
            await pilot.pause(0.01)
        assert [line.text for line in pane.buffer] == texts
        assert backlog <= LOG_BACKLOG_LINES
        assert [line.level for line in list(pane.buffer)[:8]] == ["WARNING"] + ["INFO"] * 6 + [
            "WARNING"
        ]
        await pilot.press("q")
