"""The intervals cover the simulator's truth: 20 short seeded levels at one stream, output
lengths drawn uniformly, and the 95 % intervals of the mean and median E2E latency cover
the population's (the simulator's deterministic TTFT and step, from its /_sim/truth, at
the distribution's mean length) in at least 18 of them."""

from __future__ import annotations

import asyncio
import statistics

import httpx
import pytest

from tui.bench.driver import run_bench
from tui.bench.workload import BenchSpec
from tui.sim.box import SimBox

pytestmark = pytest.mark.quiet  # latencies against the simulator's clock
LEVELS, REQUESTS = 20, 16


async def test_e2e_intervals_cover_the_simulators_truth_in_18_of_20_levels(
    serving_box: SimBox,
) -> None:
    url = serving_box.base_url
    since = max(
        (int(r["number"]) for r in httpx.get(f"{url}/_sim/truth").json()["requests"]), default=0
    )
    spec = BenchSpec(
        base_url=url, input_tokens=32, output_tokens=21, output_dist="uniform",
        output_range="2:40", concurrency=(1,) * LEVELS, num_requests=REQUESTS,
        warmup_requests=1, read_timeout_s=60.0, progress_interval_s=0.5, seed=17,
    )  # fmt: skip
    result = await asyncio.wait_for(run_bench(spec), timeout=120)
    records = httpx.get(f"{url}/_sim/truth", params={"since": since}).json()["requests"]
    ttft_s = statistics.median(float(r["ttft_s"]) for r in records)
    step_s = statistics.median(
        float(r["decode_s"]) / (int(r["output_tokens"]) - 1)
        for r in records
        if int(r["output_tokens"]) > 1
    )
    truth_ms = 1000 * (ttft_s + 20 * step_s)  # mean and median of round(U(2, 40)) is 21
    covered = {"mean": 0, "p50": 0}
    for level in result.levels:
        assert level.completed == REQUESTS and level.uncertainty is not None
        e2el = level.uncertainty.metric("e2el_ms")
        assert e2el is not None
        for figure in covered:
            interval = e2el.get(figure)
            assert interval is not None
            covered[figure] += interval.covers(truth_ms)
    assert covered["mean"] >= 18 and covered["p50"] >= 18, (covered, truth_ms)
