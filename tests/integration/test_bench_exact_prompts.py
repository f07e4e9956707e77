"""Prompts of the asked token count: the simulator's charge (its /_sim/truth) per request,
and the method the report states (tokenize, usage, approximate)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tui.bench.driver import run_bench
from tui.bench.model import BenchResult
from tui.bench.prompt_fit import CALIBRATED_TOKENIZE, CALIBRATED_USAGE
from tui.bench.workload import BenchSpec
from tui.sim.box import SimBox


def _spec(url: str, **overrides: object) -> BenchSpec:
    values: dict[str, object] = dict(
        base_url=url, input_tokens=128, output_tokens=4, concurrency=(4,), num_requests=12,
        warmup_requests=1, read_timeout_s=60.0, progress_interval_s=0.2,
    )  # fmt: skip
    values.update(overrides)
    return BenchSpec(**values)  # type: ignore[arg-type]


async def _run(spec: BenchSpec) -> BenchResult:
    return await asyncio.wait_for(run_bench(spec), timeout=120)


def _charged_since(box: SimBox, since: int) -> list[int]:
    records = httpx.get(f"{box.base_url}/_sim/truth", params={"since": since}).json()["requests"]
    return [int(record["prompt_tokens"]) for record in records]


def _last_number(box: SimBox) -> int:
    records = httpx.get(f"{box.base_url}/_sim/truth").json()["requests"]
    return max((int(record["number"]) for record in records), default=0)


@pytest.mark.parametrize(
    ("endpoint", "asked"), [("completions", 128), ("chat", 128), ("completions", 37)]
)
async def test_every_request_is_charged_the_asked_prompt_tokens(
    serving_box: SimBox, endpoint: str, asked: int
) -> None:
    since = _last_number(serving_box)
    result = await _run(_spec(serving_box.base_url, endpoint=endpoint, input_tokens=asked))
    assert result.client["prompt_method"] == CALIBRATED_TOKENIZE
    (level,) = result.levels
    assert level.completed == 12
    assert level.total_input_tokens == 12 * asked
    charged = _charged_since(serving_box, since)
    # the warm-up and the twelve measured requests; /tokenize calls are no requests
    assert charged[-13:] == [asked] * 13, charged


async def test_without_tokenize_the_usage_of_probes_calibrates(plain_sse_server: str) -> None:
    spec = _spec(plain_sse_server, model="m?itl_ms=1", input_tokens=50, num_requests=3)
    result = await _run(spec)
    assert result.client["prompt_method"] == CALIBRATED_USAGE
    assert result.levels[0].total_input_tokens == 3 * 50


async def test_drawn_lengths_and_a_mix_are_what_the_server_is_charged(
    serving_box: SimBox,
) -> None:
    spec = _spec(
        serving_box.base_url, input_dist="normal", input_stddev=24.0,
        mix="short:0.75:96/3,long:0.25:400/6", num_requests=16, warmup_requests=0, seed=5,
    )  # fmt: skip
    since = _last_number(serving_box)
    result = await _run(spec)
    assert result.client["prompt_method"] == CALIBRATED_TOKENIZE
    assert result.client["lengths"].startswith("mix short 75% 96/3, long 25% 400/6; input normal")
    records = httpx.get(f"{serving_box.base_url}/_sim/truth", params={"since": since}).json()[
        "requests"
    ]
    charged = sorted((int(r["prompt_tokens"]), int(r["output_tokens"])) for r in records)
    level_seed = spec.seed + 1000  # the runner's seed of its first level
    asked = sorted((size, out) for size, out, _ in spec.drawn_lengths(16, level_seed) or [])
    assert charged == asked
    assert sum(out == 6 for _, out in charged) == 4  # a quarter of the requests are long
