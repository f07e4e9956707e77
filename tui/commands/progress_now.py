"""`servedeck status`'s progress verdict: two scrapes a second apart, and while tokens are
flat with requests in flight, more until the profile's stall_after_s confirms or clears it."""

from __future__ import annotations

import asyncio
import time

from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot
from tui.serving.metrics import MetricsPoller, ServerMetrics
from tui.serving.progress.model import ProgressVerdict
from tui.serving.progress.watch import ProgressWatch

INTERVAL_S = 1.0


def _flat(metrics: ServerMetrics) -> bool:
    pending = (metrics.running_reqs or 0) + (metrics.waiting_reqs or 0)
    moved = (metrics.generation_tokens_per_s or 0) > 0 or (metrics.prompt_tokens_per_s or 0) > 0
    return pending > 0 and not moved


async def progress_now(deck: Deck, base_url: str, main_pid: int | None) -> ProgressVerdict:
    """The verdict now; raises ServedeckError when /metrics cannot be read."""
    stall_after_s = deck.profile.service.stall_after_s
    watch = ProgressWatch(stall_after_s)
    poller = MetricsPoller(base_url, api_key=deck.api_key)
    await poller.poll()
    deadline = time.monotonic() + stall_after_s + 3 * INTERVAL_S
    gpu: GpuBoxSnapshot | None = None
    while True:
        await asyncio.sleep(INTERVAL_S)
        metrics = await poller.poll()
        if _flat(metrics) and gpu is None:
            try:
                gpu = await (await deck.gpu_source()).sample()
            except ServedeckError:
                gpu = None
        verdict = await watch.observe(deck.host, main_pid, metrics, gpu)
        if not _flat(metrics) or verdict.state != "serving" or time.monotonic() > deadline:
            return verdict
