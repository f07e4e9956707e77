"""The simulator's vLLM 2026 engine: data-parallel ranks read per engine, through real HTTP.

A real SimBox started with `--data-parallel-size 2 --starve-engine 1` and three-token
speculative decoding: the front end
routes every request to engine 0, whose batch is two wide, so its queue grows while
engine 1 sits idle. servedeck's poller reads the two `engine` label sets apart and
says so; the sum alone would show a half-empty KV cache and nothing wrong.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.support.sim_fixtures import module_sim_box
from tui.serving.engines import idle_engine_warnings
from tui.serving.metrics import MetricsPoller
from tui.serving.readiness import ReadinessProbe
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.spec import SERVED_MODEL_NAME

OPTIONS = SimServerOptions(
    shards=4,
    decode_step_s=0.02,
    max_batch=2,
    log_interval_s=1.0,
    extra_args=(
        *("--data-parallel-size", "2", "--starve-engine", "1"),
        *("--num-speculative-tokens", "3", "--spec-acceptance", "0.8"),
        "--enable-sleep-mode",
    ),
)


dp_box = module_sim_box("dp", OPTIONS, seed=3, load_seconds=2.0)


async def _while_busy(box: SimBox, requests: int, max_tokens: int) -> list:
    """Scrape /metrics twice while `requests` long completions are in flight."""
    poller = MetricsPoller(box.base_url)
    async with httpx.AsyncClient(timeout=60) as client:
        body = {"model": SERVED_MODEL_NAME, "prompt": "hello there", "max_tokens": max_tokens}
        sent = [
            asyncio.create_task(client.post(f"{box.base_url}/v1/completions", json=body))
            for _ in range(requests)
        ]
        await asyncio.sleep(0.6)
        first = await poller.poll(client)
        await asyncio.sleep(0.6)
        second = await poller.poll(client)
        for task in sent:
            task.cancel()
        await asyncio.gather(*sent, return_exceptions=True)
    return [first, second]


def test_a_starved_engine_is_its_own_row_and_a_warning(dp_box: SimBox) -> None:
    _, metrics = asyncio.run(_while_busy(dp_box, requests=6, max_tokens=400))
    assert [e.engine for e in metrics.engines] == ["0", "1"]
    busy, starved = metrics.engines
    assert (busy.running_reqs, busy.waiting_reqs) == (2, 4)
    assert (starved.running_reqs, starved.waiting_reqs) == (0, 0)
    assert busy.generation_tokens_per_s and busy.generation_tokens_per_s > 0
    assert starved.generation_tokens_per_s == 0
    assert (metrics.running_reqs, metrics.waiting_reqs) == (2, 4)  # the sum line, as before
    assert idle_engine_warnings(metrics.engines) == ("engine 1 idle while engine 0 has 4 waiting",)


def test_the_log_names_the_data_parallel_size(dp_box: SimBox) -> None:
    assert "'data_parallel_size': 2" in Path(dp_box.log_path).read_text()


def test_speculative_decoding_acceptance_equals_the_counters(dp_box: SimBox) -> None:
    _, second = asyncio.run(_while_busy(dp_box, requests=2, max_tokens=200))
    spec = second.spec_decode
    assert spec is not None and spec.over_interval and spec.drafts > 10
    # what the page says, read again by hand: accepted / draft tokens, 1 + accepted / drafts
    assert spec.draft_tokens == 3 * spec.drafts
    assert spec.acceptance_rate == pytest.approx(spec.accepted_tokens / spec.draft_tokens)
    assert spec.mean_accepted_length == pytest.approx(1 + spec.accepted_tokens / spec.drafts)
    assert len(spec.per_position) == 3
    assert spec.per_position[0] >= spec.per_position[1] >= spec.per_position[2]
    assert 0.6 < spec.per_position[0] < 0.95  # drawn at 0.8 a position


def test_a_sleeping_engine_is_asleep_never_ready(dp_box: SimBox) -> None:
    async def scenario() -> list:
        probe = ReadinessProbe(dp_box.base_url)
        seen = [await probe.check()]
        async with httpx.AsyncClient(timeout=10) as client:
            slept = await client.post(f"{dp_box.base_url}/sleep", params={"level": 2})
            assert slept.json() == {"status": "sleeping", "level": 2}
            seen.append(await probe.check(client=client))
            body = {"model": SERVED_MODEL_NAME, "prompt": "hi", "max_tokens": 2}
            refused = await client.post(f"{dp_box.base_url}/v1/completions", json=body)
            seen.append(refused.status_code)
            await client.post(f"{dp_box.base_url}/wake_up")
            seen.append(await probe.check(client=client))
        return seen

    awake, asleep, refused, woken = asyncio.run(scenario())
    assert awake.asleep is False and awake.ready
    assert asleep.health_ok and asleep.asleep is True and not asleep.ready
    assert refused == 503
    assert woken.asleep is False and woken.ready
