"""Ending background tasks so that closing a source or a fleet can never hang.

On Python 3.11 `asyncio.wait_for` may swallow a cancellation when its inner awaitable
finishes at the same moment; a polling loop that loses its cancellation that way polls
on for ever, and a plain `task.cancel(); await task` waits for it for ever. Here a task
is cancelled again until it ends, within a bounded time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

CANCEL_RETRY_S = 0.5


async def cancel_and_wait(tasks: Iterable[asyncio.Task[object]], deadline_s: float = 10.0) -> bool:
    """Cancel every task (again if one ignores it) until all ended or `deadline_s` passed.

    Returns whether every task ended. Never raises: what a task raised is dropped, as a
    task being closed has nothing more to say. A caller that is itself cancelled while
    waiting here is still cancelled.
    """
    every = list(tasks)
    pending = {task for task in every if not task.done()}
    give_up_at = time.monotonic() + deadline_s
    while pending:
        for task in pending:
            task.cancel()
        left_s = give_up_at - time.monotonic()
        if left_s <= 0:
            return False
        _, pending = await asyncio.wait(pending, timeout=min(CANCEL_RETRY_S, left_s))
    for task in every:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" at exit
    return True
