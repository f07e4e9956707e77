"""A log file written to right now is read again within ~10 ms, not at the idle poll.

A flood appended in writes is otherwise held back a whole poll (0.1 s) at each end of
the file the follower catches up with; an idle file is still polled at poll_s.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tui.logs.tail import FileFollower

IDLE_POLL_S = 5.0


async def test_a_busy_file_is_read_again_before_the_idle_poll(tmp_path: Path) -> None:
    path = tmp_path / "service.log"
    path.write_text("")
    batches = FileFollower(str(path), initial_lines=0, poll_s=IDLE_POLL_S).batches()
    try:
        first = asyncio.ensure_future(anext(batches))
        await asyncio.sleep(0.05)  # the follower is at the end of the empty file
        with path.open("a") as out:
            out.write("first\n")
        assert [line.text for line in await asyncio.wait_for(first, 30)] == ["first"]
        started = time.monotonic()
        second = asyncio.ensure_future(anext(batches))
        await asyncio.sleep(0.05)
        with path.open("a") as out:
            out.write("second\n")
        assert [line.text for line in await asyncio.wait_for(second, 30)] == ["second"]
        assert time.monotonic() - started < IDLE_POLL_S / 2  # not a whole idle poll
    finally:
        await batches.aclose()
