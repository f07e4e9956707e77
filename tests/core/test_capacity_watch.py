"""A capacity level's watch: the one stop rule both kinds of level share (a failed
request, a cancel), the peak in flight, and the client's sample after the load."""

from __future__ import annotations

import asyncio

import httpx

from tui.bench.capacity.watch import LevelWatch
from tui.bench.telemetry import MetricsPoller


async def _until(stop: asyncio.Event, ticks: list[int]) -> None:
    """A load that runs until the level is stopped, counting its ticks."""
    while not stop.is_set():
        ticks.append(len(ticks))
        await asyncio.sleep(0.005)


async def _watch(**flags: object) -> tuple[LevelWatch, asyncio.Event, list[int]]:
    # Nothing listens on port 9: every /metrics scrape fails and is skipped, as on a
    # server without /metrics; the stop rule must not need one.
    async with httpx.AsyncClient(timeout=0.5) as client:
        stop, cancel, ticks = asyncio.Event(), asyncio.Event(), []
        watch = LevelWatch(
            0.01,
            MetricsPoller(client, "http://127.0.0.1:9/metrics"),
            stop,
            cancel,
            nominal=4,
            steady=lambda: len(ticks) > 2,
            failed=lambda: bool(flags.get("fail")) and len(ticks) > 5,
            in_flight=lambda: 7 if len(ticks) > 1 else 1,
        )
        if flags.get("cancel"):
            asyncio.get_running_loop().call_later(0.1, cancel.set)
        sample = await asyncio.wait_for(watch.run(_until(stop, ticks)), timeout=10)
        assert sample.wall_s > 0
    return watch, stop, ticks


async def test_a_failed_request_stops_the_level() -> None:
    watch, stop, ticks = await _watch(fail=True)
    assert stop.is_set() and len(ticks) >= 6
    assert watch.peak_in_flight == 7


async def test_a_cancel_stops_the_level() -> None:
    _, stop, _ = await _watch(cancel=True)
    assert stop.is_set()
