"""Waiting on a console's state in Pilot tests: a condition with a deadline, never a fixed sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def pilot_wait(
    pilot: object,
    predicate: Callable[[], object],
    what: str | Callable[[], str],
    timeout_s: float = 90.0,
) -> None:
    """Let the console run until predicate holds; fail naming what did not happen (what, or
    what() at the failure, for a message that shows the state then)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        if predicate():
            return
        await pilot.pause(0.1)  # type: ignore[attr-defined]
    raise AssertionError(f"not within {timeout_s:g} s: {what if isinstance(what, str) else what()}")
