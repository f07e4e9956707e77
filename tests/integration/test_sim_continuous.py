"""Sixty-four users on the real simulated server: continuous batching, waves and their cause.

A real SimBox and 64 closed-loop streaming users (httpx, one token per SSE event).
Each user sends its next request the moment its last one ends.

- Users whose first requests end at different times (the first asks i/64 of the
  output, as the capacity finder's warm-up does) keep the batch full: once warmed up,
  no second passes without output, and the p99 gap between tokens stays within 3x
  of the median TPOT, since each step prefills only the few prompts that just came.
- Users that all start together with identical requests stay in lockstep, on vLLM as
  here: they finish in the same step and their prompts come back together, filling
  whole token budgets. Their ITL p99 is one full-budget step of the simulator's own
  step-time truth (`ServerSettings.batch_step_s`), not a scheduler that waits for
  the batch to drain.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from tui.bench.metrics import percentile
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.spec import ServerSettings

# Per-token timings against each other: quiet (tests/support/quiet.py).
pytestmark = pytest.mark.quiet

USERS = 64
PROMPT = 512
OUTPUT = 96
MEASURED_ROUNDS = 2
BUDGET = 4096
OPTIONS = SimServerOptions(
    shards=8,
    prefill_tok_s=8000.0,
    decode_step_s=0.02,
    decode_alpha=0.02,
    max_num_batched_tokens=BUDGET,
    log_interval_s=1.0,
)
# The same model the server runs (state_dir and port play no part in it).
MODEL = ServerSettings(
    "",
    0,
    prefill_tok_s=8000.0,
    decode_step_s=0.02,
    decode_alpha=0.02,
    max_num_batched_tokens=BUDGET,
)


@pytest.fixture(scope="module")
def users_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
    box = SimBox(tmp_path_factory.mktemp("users"), seed=7, load_seconds=1.5, options=OPTIONS)
    try:
        box.start()
        assert box.wait_until_active(timeout_s=90) == "active", box.log_path.read_text()[-3000:]
        yield box
    finally:
        box.close()


@dataclass
class Seen:
    """Token arrival times (loop seconds) of the measured requests, and when warm-up ended."""

    streams: list[list[float]] = field(default_factory=list)
    warm_end_s: float = 0.0
    end_s: float = math.inf


async def _request(client: httpx.AsyncClient, url: str, max_tokens: int) -> list[float]:
    loop = asyncio.get_running_loop()
    body = {
        "prompt": list(range(1, PROMPT + 1)),
        "max_tokens": max_tokens,
        "stream": True,
        "ignore_eos": True,
    }
    times: list[float] = []
    async with client.stream("POST", f"{url}/v1/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data: {") and json.loads(line[6:])["choices"]:
                times.append(loop.time())
    assert len(times) == max_tokens
    return times


async def _closed_loop(url: str, staggered: bool) -> Seen:
    seen = Seen()
    warm_done: list[float] = []
    measured_ends: list[float] = []
    limits = httpx.Limits(max_connections=USERS + 4, max_keepalive_connections=USERS + 4)

    async def user(number: int, client: httpx.AsyncClient) -> None:
        first = math.ceil(OUTPUT * number / USERS) if staggered else OUTPUT
        warm = await _request(client, url, first)
        warm_done.append(warm[-1])
        for _ in range(MEASURED_ROUNDS):
            seen.streams.append(await _request(client, url, OUTPUT))
        measured_ends.append(seen.streams[-1][-1])

    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        await asyncio.wait_for(
            asyncio.gather(*(user(n, client) for n in range(1, USERS + 1))), timeout=240
        )
    seen.warm_end_s, seen.end_s = max(warm_done), min(measured_ends)
    return seen


def _itls_s(seen: Seen) -> list[float]:
    return [later - earlier for s in seen.streams for earlier, later in itertools.pairwise(s)]


def _tpot_p50_s(seen: Seen) -> float:
    return statistics.median((s[-1] - s[0]) / (len(s) - 1) for s in seen.streams)


async def test_spread_users_keep_tokens_flowing_every_second(users_box: SimBox) -> None:
    seen = await _closed_loop(users_box.base_url, staggered=True)
    # Whole seconds while every user is past warm-up and none has finished.
    start, end = math.ceil(seen.warm_end_s), math.floor(seen.end_s)
    assert end - start >= 3, (seen.warm_end_s, seen.end_s)
    per_second = dict.fromkeys(range(start, end), 0)
    for stream in seen.streams:
        for at_s in stream:
            if start <= at_s < end:
                per_second[int(at_s)] += 1
    assert min(per_second.values()) > 0, per_second
    itl_p99_s, tpot_p50_s = percentile(_itls_s(seen), 99), _tpot_p50_s(seen)
    assert itl_p99_s < 3 * tpot_p50_s, (itl_p99_s, tpot_p50_s)


async def test_lockstep_users_wait_one_full_budget_step_not_a_drained_batch(
    users_box: SimBox,
) -> None:
    seen = await _closed_loop(users_box.base_url, staggered=False)
    itl_p99_s, tpot_p50_s = percentile(_itls_s(seen), 99), _tpot_p50_s(seen)
    full_step_s = MODEL.batch_step_s(USERS - BUDGET // PROMPT, BUDGET - USERS + BUDGET // PROMPT)
    # Waves: a gap of a whole budget of prompts, several times the median TPOT...
    assert itl_p99_s > 3 * tpot_p50_s, (itl_p99_s, tpot_p50_s)
    # ...and no longer than one such step (a loaded machine may stretch it, not double
    # it): decoding goes on through every prefill, nothing waits for the batch to drain.
    assert 0.8 * full_step_s < itl_p99_s < 1.8 * full_step_s, (itl_p99_s, full_step_s)
