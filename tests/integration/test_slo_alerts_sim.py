"""Live SLO alerts against the simulator's real HTTP server: a latency step, then none.

Users with random lengths and pauses keep a noisy steady load; the alert monitor is fed
each scrape of the real /metrics (windows of 3 s and 8 s so the test takes seconds, the
defaults are 60 s and 300 s). The simulator's `hang: slow` fault makes every step 8x
longer: p99 ITL goes from ~20 ms to ~160 ms against an 80 ms SLO. The alert must fire
within one long window of the step and resolve within a short window (plus a scrape)
after it ends, and no SLO alert may change state during the steady stretches.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable

import pytest

from tests.support.sim_fixtures import started
from tests.support.sim_traffic import scrape_until, set_fault, streaming_users
from tui.alerts.engine import AlertChange
from tui.alerts.monitor import AlertMonitor
from tui.core.alert_rules import AlertingConfig, LiveSlo
from tui.serving.metrics import MetricsPoller
from tui.sim.box import SimBox, SimServerOptions

OPTIONS = SimServerOptions(shards=8, decode_step_s=0.02, decode_alpha=0.02, tp=4)
SLO = LiveSlo(ttft_p99_ms=0, itl_p99_ms=80, short_window_s=3, long_window_s=8)
SCRAPE_S = 0.5


def noisy_load(box: SimBox) -> contextlib.AbstractAsyncContextManager[None]:
    """Users streaming completions of random lengths with random pauses between them."""
    rng = random.Random(38)

    def request() -> dict[str, object]:
        return {
            "model": "kimi-k2.5-int4",
            "prompt": "The operator asks for a summary of the last shift's incidents.",
            "max_tokens": rng.randint(20, 200),
            "stream": True,
        }

    return streaming_users(box, request, pause_s=lambda: rng.uniform(0.0, 0.5))


class Feed:
    """Scrapes /metrics every SCRAPE_S into the monitor; the SLO alerts' changes, timed."""

    def __init__(self, box: SimBox) -> None:
        self.monitor = AlertMonitor(AlertingConfig(slo=SLO), "sim")
        self.poller = MetricsPoller(box.base_url)
        self.changes: list[tuple[float, AlertChange]] = []

    async def scrape(self) -> list[AlertChange]:
        metrics = await self.poller.poll()
        slo = [c for c in self.monitor.observe_metrics(metrics) if c.rule.metric.startswith("slo.")]
        self.changes += [(time.monotonic(), change) for change in slo]
        return slo

    async def run(
        self, seconds: float, until: Callable[[AlertChange], bool] = lambda _: False
    ) -> float:
        """Scrape for `seconds` (or until a change matches); the seconds it took."""
        _, took_s = await scrape_until(
            self.scrape, lambda slo: any(until(c) for c in slo), seconds, SCRAPE_S
        )
        return took_s

    def since(self, mark: int) -> list[str]:
        return [f"{c.alert_id} {c.state}" for _, c in self.changes[mark:]]


@pytest.fixture
def box(sim_box_factory: Callable[..., SimBox]) -> SimBox:
    return started(sim_box_factory(OPTIONS, load_seconds=1.5, gpu_count=4), timeout_s=60)


def test_a_latency_step_fires_and_resolves_with_no_flapping(box: SimBox) -> None:
    async def scenario() -> None:
        feed = Feed(box)
        async with noisy_load(box):
            await feed.run(SLO.long_window_s + 12)  # the windows fill, then a steady stretch
            assert feed.since(0) == [], feed.since(0)

            await set_fault(box, hang="slow")
            fired_s = await feed.run(
                SLO.long_window_s + 4, lambda c: c.alert_id == "slo-itl" and c.state == "firing"
            )
            firing = [c for _, c in feed.changes if c.alert_id == "slo-itl"]
            assert firing and firing[-1].state == "firing", feed.since(0)
            assert fired_s <= SLO.long_window_s + 2, fired_s
            print(f"\nslow step: slo-itl fired after {fired_s:.1f} s: {firing[-1].text}")
            assert "(bucket " in firing[-1].text

            await feed.run(4)  # the step goes on: it stays firing
            await set_fault(box, hang="")
            mark = len(feed.changes)
            resolved_s = await feed.run(
                SLO.short_window_s + 6,
                lambda c: c.alert_id == "slo-itl" and c.state == "resolved",
            )
            assert "slo-itl resolved" in feed.since(mark), feed.since(0)
            print(f"step ended: slo-itl resolved after {resolved_s:.1f} s")

            mark = len(feed.changes)
            await feed.run(15)  # steady again: no SLO alert changes at all
            assert feed.since(mark) == [], feed.since(0)
            transitions = len(feed.changes)
            print(f"SLO alert transitions over the whole run: {transitions} ({feed.since(0)})")
            assert feed.since(0).count("slo-itl firing") == 1

    asyncio.run(scenario())
