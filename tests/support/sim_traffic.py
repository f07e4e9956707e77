"""Driving a running simulator from a test: users streaming, faults switched, scrapes until.

The simulator tests that watch a verdict or an alert change under load (the progress
verdict, the live SLO alerts) share these: the load, the fault's POST and the loop that
scrapes until a condition holds or its time is up.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import httpx

from tui.sim.box import SimBox

T = TypeVar("T")


@contextlib.asynccontextmanager
async def streaming_users(
    box: SimBox,
    request: Callable[[], dict[str, object]],
    users: int = 4,
    pause_s: Callable[[], float] = lambda: 0.0,
) -> AsyncIterator[None]:
    """`users` clients streaming completions back to back (each body from request(), a
    pause_s() between two) for the block; a dropped stream is retried, not raised."""

    async def user(client: httpx.AsyncClient) -> None:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                async with client.stream("POST", "/v1/completions", json=request()) as answer:
                    async for _ in answer.aiter_bytes():
                        pass
            await asyncio.sleep(pause_s())

    async with httpx.AsyncClient(base_url=box.base_url, timeout=120) as client:
        tasks = [asyncio.create_task(user(client)) for _ in range(users)]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def set_fault(box: SimBox, **body: object) -> None:
    """Switch the simulator's runtime faults (POST /_sim/fault); a refusal fails the test."""
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{box.base_url}/_sim/fault", json=body)
        assert answer.status_code == 200, answer.text


async def scrape_until(
    scrape: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    timeout_s: float,
    every_s: float = 0.5,
) -> tuple[list[T], float]:
    """Scrape every `every_s` until done(result) holds or `timeout_s` has passed; every
    result in order (the last is the one that decided) and the seconds it took."""
    start = time.monotonic()
    results: list[T] = []
    while True:
        results.append(await scrape())
        if done(results[-1]) or time.monotonic() - start >= timeout_s:
            return results, time.monotonic() - start
        await asyncio.sleep(every_s)
