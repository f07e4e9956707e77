"""The simulator batches like vLLM: prompts are chunked into steps that keep decoding.

A real SimBox and the real benchmark runner (its own process). Settings are chosen
so the old all-prompts-in-one-step behaviour stands out by an order of magnitude:
32 streams of 1,024-token prompts at 20,000 prompt tok/s make a wave step of
~1.6 s, while a 2,048-token budget keeps every step near 0.12 s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tui.bench.driver import run_bench
from tui.bench.workload import BenchSpec
from tui.sim.box import SimBox, SimServerOptions

PREFILL_TOK_S = 20_000.0
DECODE_STEP_S = 0.01
BUDGET = 2048
STREAMS = 32
PROMPT = 1024
OPTIONS = SimServerOptions(
    shards=8,
    prefill_tok_s=PREFILL_TOK_S,
    decode_step_s=DECODE_STEP_S,
    decode_alpha=0.02,
    max_num_batched_tokens=BUDGET,
    log_interval_s=1.0,
)
# The longest honest step: a full decode batch plus a full prompt budget.
LONGEST_STEP_S = DECODE_STEP_S * (1 + 0.02 * (STREAMS - 1)) + BUDGET / PREFILL_TOK_S
WAVE_STEP_S = STREAMS * PROMPT / PREFILL_TOK_S


@pytest.fixture(scope="module")
def batching_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
    box = SimBox(tmp_path_factory.mktemp("batching"), seed=5, load_seconds=1.5, options=OPTIONS)
    try:
        box.start()
        assert box.wait_until_active(timeout_s=90) == "active", box.log_path.read_text()[-3000:]
        yield box
    finally:
        box.close()


async def _truth(box: SimBox) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(f"{box.base_url}/_sim/truth", params={"since": 0})
        response.raise_for_status()
        return sorted(response.json()["requests"], key=lambda r: r["number"])


async def test_prompts_join_the_running_batch_without_waves(batching_box: SimBox) -> None:
    spec = BenchSpec(
        base_url=batching_box.base_url, input_tokens=PROMPT, output_tokens=32,
        concurrency=(STREAMS,), num_requests=3 * STREAMS, warmup_requests=0,
        progress_interval_s=0.5, read_timeout_s=120.0,
    )  # fmt: skip
    started_s = time.time()
    result = await asyncio.wait_for(run_bench(spec), timeout=300)
    level = result.levels[0]
    assert (level.completed, level.failed) == (level.num_requests, 0)
    # Decoding goes on in every step: no request waits a whole wave of prefills for a token.
    # (A loaded two-core machine may stretch a step, never tenfold.)
    assert level.itl.p99_ms / 1000 < LONGEST_STEP_S * 2.5 < WAVE_STEP_S, level.itl
    assert level.tpot.median_ms <= level.itl.p99_ms
    records = [r for r in await _truth(batching_box) if r["arrival_s"] >= started_s]
    first_wave = sorted(records[:STREAMS], key=lambda r: r["first_token_s"])
    # The 32 prompts that arrive together are prefilled a budget at a time: their first
    # tokens come in steps, and TTFT grows with the place in the queue.
    firsts = {round(r["first_token_s"], 3) for r in first_wave}
    assert len(firsts) >= STREAMS * PROMPT // BUDGET // 2, sorted(firsts)
    ttfts = sorted(r["ttft_s"] for r in first_wave)
    assert ttfts[0] < ttfts[-1] / 4, ttfts
