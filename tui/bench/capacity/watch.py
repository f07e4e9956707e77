"""A capacity level's watch: /metrics polled and the client metered while its load runs.

Both kinds of level (closed-loop users, open-loop rates) stop the same way: a cancel,
a failed request or an over-saturated server sets the level's stop event at once; a
closed-loop level whose miss its intervals already show stops too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from tui.bench.client_load import ClientMeter, ClientSample
from tui.bench.telemetry import MetricsPoller

# The steady window opens when the warm-up ends; its first /metrics sample is taken then,
# not at the next poll, so a level shorter than one poll still has two samples to diff
# (its prefix-cache hit rate and server latencies are measured, not missing).
STEADY_CHECK_S = 0.02


class LevelWatch:
    """Polls /metrics while a level's load runs and stops the load when it must."""

    def __init__(
        self,
        poll_s: float,
        poller: MetricsPoller,
        stop: asyncio.Event,
        cancel: asyncio.Event,
        *,
        nominal: int,
        steady: Callable[[], bool],
        failed: Callable[[], bool],
        in_flight: Callable[[], int] | None = None,
        decided: Callable[[], bool] | None = None,
    ) -> None:
        self.poll_s = poll_s
        self.poller = poller
        self.stop = stop
        self.cancel = cancel
        self.nominal = nominal  # the concurrency over-saturation is judged against
        self.steady = steady
        self.failed = failed
        self.in_flight = in_flight
        self.decided = decided  # the level's verdict is known: its remaining load is waste
        self.peak_in_flight = 0

    async def _watch(self) -> None:
        steady = False
        while not self.stop.is_set():
            await asyncio.sleep(self.poll_s if steady else STEADY_CHECK_S)
            if self.in_flight is not None:
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight())
            steady = self.steady()
            await self.poller.sample(steady=steady)
            over = self.poller.oversaturated(self.nominal)
            known = self.decided is not None and self.decided()
            if self.cancel.is_set() or self.failed() or over or known:
                self.stop.set()

    async def run(self, load: Coroutine[Any, Any, object]) -> ClientSample:
        """Await the level's load under the watch; the client's sample, after a last
        /metrics sample that closes the steady window."""
        watcher = asyncio.create_task(self._watch())
        meter = ClientMeter()
        meter.start()
        try:
            await load
        finally:
            self.stop.set()
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        sample = await meter.stop()
        await self.poller.sample(steady=True)
        return sample
