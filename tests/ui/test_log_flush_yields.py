"""A flood's flush lets the event loop run between its chunks (keys, timers, the screen).

Textual's message loop takes a queued callback without returning to the event loop, so
chunks chained with call_later alone ran as one turn (~40 ms every flush in a flood).
"""

from __future__ import annotations

import asyncio
import time

from tests.support.snapshot_apps.log_pane_app import LogPaneApp
from tui.logs.line import LogLine
from widgets.log_pane import FLUSH_CHUNK_LINES, LogPane

FLOOD_LINES = 10 * FLUSH_CHUNK_LINES


async def test_the_event_loop_runs_between_the_chunks_of_a_flush() -> None:
    app = LogPaneApp("loading", max_lines=50_000)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(LogPane)
        await pilot.pause()
        shown_before = pane.log_view.line_count
        pane.add_lines(
            LogLine(f"INFO 11-29 10:00:00 [x.py:1] line {i}") for i in range(FLOOD_LINES)
        )
        seen: list[int] = []  # the Log's length each time the event loop runs a task step

        async def probe() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                seen.append(pane.log_view.line_count - shown_before)
                if seen[-1] >= FLOOD_LINES:
                    return
                await asyncio.sleep(0)

        watcher = asyncio.create_task(probe())
        pane.flush()  # the first chunk now, the rest chained
        await asyncio.wait_for(watcher, 90)
        steps = sorted({count for count in seen if 0 < count < FLOOD_LINES})
        assert seen[-1] == FLOOD_LINES
        assert len(steps) >= 5, steps  # the loop ran between chunks, not once at the end
