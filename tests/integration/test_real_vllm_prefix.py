"""Prefix-cache hit rate as servedeck reports it, against a real vLLM 0.32.0 CPU server.

A shared-prefix run (G system prompts of S tokens, each followed by a fresh
Q-token question) and a random run of the same prompt length go through
servedeck's runner; the hit rate servedeck reports (its /metrics deltas per
level, and the capacity telemetry's poller) must equal vLLM's own
`prefix_cache_hits_total / prefix_cache_queries_total` over the same window,
land within 5 points of the intended rate, and be far above the random run's.

The server is the session's, started with `--block-size 32` (SESSION_SERVER_ARGS
says why). Each run uses a fresh seed, so nothing is cached from an earlier one,
and the tests sharing that server run one after another on one worker, so the
counters read around a run count only its requests.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.vllm_harness import PREFIX_BLOCK_TOKENS, VllmServer
from tui.bench.driver import run_bench
from tui.bench.model import BenchResult
from tui.bench.telemetry import MetricsPoller
from tui.bench.workload import BenchSpec

pytestmark = pytest.mark.real_vllm

REQUESTS = 12
GROUPS = 4
# Nominal lengths; the tiny model's tokenizer makes these prompts 400-470 tokens for the seeds
# below, so with 8 output tokens they stay inside --max-model-len 512.
PREFIX_TOKENS = 320
QUESTION_TOKENS = 32
BLOCK_TOKENS = PREFIX_BLOCK_TOKENS
COUNTERS = (
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:request_success_total",
)


async def vllm_counters(server: VllmServer) -> dict[str, float]:
    """vLLM's own counters, read with the reference parser (not servedeck's)."""
    async with httpx.AsyncClient(timeout=30.0) as client:
        text = (await client.get(f"{server.base_url}/metrics")).text
    totals = dict.fromkeys(COUNTERS, 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in totals:
                totals[sample.name] += sample.value
    return totals


async def settled(server: VllmServer, finished: float) -> dict[str, float]:
    """Counters once the server has counted `finished` requests (stats land after replies)."""
    deadline = time.monotonic() + 60.0
    now = await vllm_counters(server)
    while now["vllm:request_success_total"] < finished and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        now = await vllm_counters(server)
    assert now["vllm:request_success_total"] >= finished, now
    return now


async def measured_run(
    server: VllmServer, spec: BenchSpec
) -> tuple[BenchResult, float, float | None]:
    """servedeck's result, vLLM's hit rate over the run, and the capacity poller's."""
    async with httpx.AsyncClient(timeout=30.0) as client:
        poller = MetricsPoller(client, f"{server.base_url}/metrics")
        before = await vllm_counters(server)
        await poller.sample(steady=True)
        result = await asyncio.wait_for(run_bench(spec), timeout=420.0)
        (level,) = result.levels
        assert (level.completed, level.failed) == (REQUESTS, 0), level.errors
        after = await settled(server, before["vllm:request_success_total"] + REQUESTS)
        await poller.sample(steady=True)
    queries = after[COUNTERS[0]] - before[COUNTERS[0]]
    hits = after[COUNTERS[1]] - before[COUNTERS[1]]
    assert queries > 0, "vLLM counted no prefix-cache queries"
    return result, hits / queries, poller.stats(spec.concurrency[0]).prefix_hit_rate_pct


def spec_for(server: VllmServer, workload: str, input_tokens: int, seed: int) -> BenchSpec:
    return BenchSpec(
        base_url=server.base_url,
        workload=workload,
        input_tokens=input_tokens,
        output_tokens=8,
        prefix_groups=GROUPS,
        prefix_tokens=PREFIX_TOKENS,
        # At most G in flight: each group's first request is done before its second starts.
        concurrency=(2,),
        num_requests=REQUESTS,
        warmup_requests=0,  # so servedeck's window and the one read here are the same
        seed=seed,
        read_timeout_s=120.0,
    )


async def test_shared_prefix_hit_rate_matches_vllm_and_beats_random(
    real_vllm_server: VllmServer,
) -> None:
    server = real_vllm_server
    shared_spec = spec_for(server, "shared-prefix", QUESTION_TOKENS, seed=2301)
    random_spec = spec_for(server, "random", PREFIX_TOKENS + 2 * QUESTION_TOKENS, seed=2302)

    shared, vllm_shared, poller_shared = await measured_run(server, shared_spec)
    random_run, vllm_random, poller_random = await measured_run(server, random_spec)

    shared_level, random_level = shared.levels[0], random_run.levels[0]
    assert shared_level.server is not None and random_level.server is not None
    # Same prompt length both ways, so the difference is the shared prefix alone.
    assert shared_level.total_input_tokens == pytest.approx(
        random_level.total_input_tokens, rel=0.2
    )

    # What servedeck reports is vLLM's own account over the same requests.
    reported_shared = shared.client["measured_prefix_hit_rate"]
    assert reported_shared == pytest.approx(vllm_shared, abs=1e-9)
    assert shared_level.server.prefix_hit_rate == pytest.approx(vllm_shared, abs=1e-9)
    assert random_level.server.prefix_hit_rate == pytest.approx(vllm_random, abs=1e-9)
    assert poller_shared == pytest.approx(100 * vllm_shared, abs=1e-6)
    assert poller_random == pytest.approx(100 * vllm_random, abs=1e-6)

    # The measured rate is the intended one within 5 points (whole 32-token blocks only).
    intended = shared.client["intended_prefix_hit_rate"]
    expected = (REQUESTS - GROUPS) * PREFIX_TOKENS / (REQUESTS * (PREFIX_TOKENS + QUESTION_TOKENS))
    assert intended == pytest.approx(expected)
    assert abs(reported_shared - intended) <= 0.05, (reported_shared, intended)
    # Random prompts share no whole block; the shared prefix is served from the cache.
    assert vllm_random < 0.05
    assert reported_shared > vllm_random + 0.4
    print(
        f"\nprefix-cache hit rate: shared-prefix {100 * reported_shared:.1f}% "
        f"(intended {100 * intended:.1f}%, vLLM {100 * vllm_shared:.1f}%), "
        f"random {100 * vllm_random:.1f}%"
    )
