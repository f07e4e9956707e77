"""MetricsPoller against a real vLLM 0.32.0 CPU server while it serves a burst of requests.

The burst's own usage blocks are the ground truth: between two scrapes around
it the server counted exactly those prompt and generation tokens, so the
poller's rates times its interval must give them back.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.support.vllm_harness import VllmServer
from tui.serving.metrics import MetricsPoller, parse_metrics

pytestmark = pytest.mark.real_vllm

BURST = 6
MAX_TOKENS = 48


async def one_request(client: httpx.AsyncClient, server: VllmServer, index: int) -> dict[str, int]:
    body = {
        "model": server.model,
        "prompt": f"request {index} of a burst that servedeck measures from the outside",
        "max_tokens": MAX_TOKENS,
        "ignore_eos": True,
        "temperature": 0.0,
    }
    response = await client.post(f"{server.base_url}/v1/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()["usage"]


async def counters(client: httpx.AsyncClient, server: VllmServer) -> tuple[float, float, float]:
    """(prompt tokens, generation tokens, finished requests) as the server counts them now."""
    scrape = parse_metrics((await client.get(f"{server.base_url}/metrics")).text)
    return (
        scrape.values["vllm:prompt_tokens"],
        scrape.values["vllm:generation_tokens"],
        scrape.values["vllm:request_success"],
    )


async def settled_counters(
    client: httpx.AsyncClient, server: VllmServer, finished: float, timeout_s: float = 30.0
) -> tuple[float, float, float]:
    """Counters once the server has recorded `finished` requests (stats land just after replies)."""
    deadline = time.monotonic() + timeout_s
    now = await counters(client, server)
    while now[2] < finished and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        now = await counters(client, server)
    assert now[2] >= finished, f"server counted {now[2]} finished requests, expected {finished}"
    return now


async def test_poller_rates_and_latencies_around_a_burst(real_vllm_server: VllmServer) -> None:
    server = real_vllm_server
    poller = MetricsPoller(server.base_url, timeout_s=30.0)
    async with httpx.AsyncClient(timeout=120.0) as client:
        before = await counters(client, server)
        first = await poller.poll(client)
        assert first.source == "metrics" and first.interval_s is None
        assert first.generation_tokens_per_s is None  # one scrape gives no rate
        assert first.running_reqs == 0 and first.waiting_reqs == 0

        usages = await asyncio.gather(*(one_request(client, server, i) for i in range(BURST)))
        after = await settled_counters(client, server, before[2] + BURST)
        final = await poller.poll(client)

    prompt_sent = sum(usage["prompt_tokens"] for usage in usages)
    generated = sum(usage["completion_tokens"] for usage in usages)
    assert generated == BURST * MAX_TOKENS
    # The counters moved by exactly the burst (nothing else talks to this server now).
    assert (after[0] - before[0], after[1] - before[1]) == (prompt_sent, generated)

    assert final.interval_s is not None and final.interval_s > 0
    assert final.prompt_tokens_per_s is not None and final.prompt_tokens_per_s > 0
    assert final.generation_tokens_per_s is not None and final.generation_tokens_per_s > 0
    # The interval spans the whole burst: rate x interval gives its tokens back.
    assert final.generation_tokens_per_s * final.interval_s == pytest.approx(generated, rel=1e-6)
    assert final.prompt_tokens_per_s * final.interval_s == pytest.approx(prompt_sent, rel=1e-6)

    assert final.running_reqs == 0 and final.waiting_reqs == 0
    assert final.kv_cache_usage_pct is not None and 0 <= final.kv_cache_usage_pct <= 100
    for quantiles in (
        (final.ttft_p50_s, final.ttft_p90_s, final.ttft_p99_s),
        (final.itl_p50_s, final.itl_p90_s, final.itl_p99_s),
    ):
        assert all(q is not None and q > 0 for q in quantiles), quantiles
        assert quantiles[0] <= quantiles[1] <= quantiles[2]  # type: ignore[operator]
    # A TTFT cannot exceed the longest request's whole wall time.
    assert final.ttft_p99_s is not None and final.ttft_p99_s < 120.0
