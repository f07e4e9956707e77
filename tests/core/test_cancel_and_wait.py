"""Closing never hangs on a task that lost its cancellation (Python 3.11's wait_for race)."""

from __future__ import annotations

import asyncio
import time

from tui.core.tasks import cancel_and_wait


async def _polls_on_after_one_cancel(polls: list[int]) -> None:
    """A poll loop whose first cancellation is swallowed, as wait_for may do on 3.11."""
    swallowed = False
    while True:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed = True
        polls.append(1)


async def _ignores_cancel(released: asyncio.Event) -> None:
    while not released.is_set():
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            pass


async def _fails() -> None:
    raise RuntimeError("the poll failed")


async def test_a_swallowed_cancellation_is_repeated_until_the_task_ends() -> None:
    polls: list[int] = []
    task = asyncio.create_task(_polls_on_after_one_cancel(polls))
    await asyncio.sleep(0.12)
    assert await cancel_and_wait([task], deadline_s=5.0)
    assert task.cancelled()


async def test_a_task_that_never_ends_is_given_up_within_the_deadline() -> None:
    released = asyncio.Event()
    task = asyncio.create_task(_ignores_cancel(released))
    await asyncio.sleep(0)
    started = time.monotonic()
    assert not await cancel_and_wait([task], deadline_s=0.6)
    assert time.monotonic() - started < 1.5
    released.set()  # the test's own clean-up: let it end before the loop closes
    await task


async def test_finished_and_failed_tasks_are_collected_without_raising() -> None:
    failed = asyncio.create_task(_fails())
    done = asyncio.create_task(asyncio.sleep(0))
    await asyncio.sleep(0.01)
    assert await cancel_and_wait([failed, done])
    assert await cancel_and_wait([])
