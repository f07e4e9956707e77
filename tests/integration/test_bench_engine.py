"""The benchmark engine end to end: the runner process against a real SSE server process.

The server (tests/support/sse_server.py) sleeps a known TTFT before the first token and
a known gap between tokens. Sleeps only ever overshoot, so latencies are
checked as at least the configured value and at most a generous factor above
it (this machine is small and shared).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import httpx
import pytest

from tui.bench.driver import BenchError, BenchProcess, BenchProgress, run_bench
from tui.bench.history import append_result, history_path
from tui.bench.model import OUTPUT_TOKENS_FROM_CHUNKS, OUTPUT_TOKENS_FROM_USAGE, BenchResult
from tui.bench.prompt_fit import APPROXIMATE, CALIBRATED_TOKENIZE
from tui.bench.workload import BenchSpec

SLACK = 1.8  # latencies may exceed the server's sleeps by this factor on a loaded machine


def _spec(url: str, model: str, **overrides: object) -> BenchSpec:
    spec = BenchSpec(
        base_url=url, model=model, input_tokens=32, output_tokens=12, concurrency=(1,),
        num_requests=6, warmup_requests=0, progress_interval_s=0.2, read_timeout_s=30.0,
    )  # fmt: skip
    return replace(spec, **overrides)  # type: ignore[arg-type]


async def _run(spec: BenchSpec) -> BenchResult:
    return await asyncio.wait_for(run_bench(spec), timeout=120)


async def test_latencies_match_the_servers_known_delays(sse_server: str) -> None:
    ttft_ms, itl_ms, tokens = 80.0, 15.0, 12
    result = await _run(_spec(sse_server, f"m?ttft_ms={ttft_ms:g}&itl_ms={itl_ms:g}"))
    level = result.levels[0]
    assert (level.completed, level.failed, level.partial) == (6, 0, False)
    assert level.total_output_tokens == 6 * tokens
    assert level.output_tokens_source == OUTPUT_TOKENS_FROM_USAGE
    assert ttft_ms <= level.ttft.median_ms <= ttft_ms * SLACK
    assert itl_ms <= level.tpot.median_ms <= itl_ms * SLACK
    assert level.itl.count == 6 * (tokens - 1)
    assert itl_ms * 0.9 <= level.itl.median_ms <= itl_ms * SLACK
    expected_e2el = ttft_ms + (tokens - 1) * itl_ms
    assert expected_e2el <= level.e2el.median_ms <= expected_e2el * SLACK
    # E2EL = TTFT + (n - 1) * TPOT, per request, so also for the means.
    assert level.e2el.mean_ms == pytest.approx(
        level.ttft.mean_ms + (tokens - 1) * level.tpot.mean_ms, rel=1e-6
    )
    assert level.output_throughput == pytest.approx(
        level.total_output_tokens / level.duration_s, rel=1e-9
    )
    assert result.context.engine_version == "0.32.0"
    assert level.server is not None
    assert level.server.requests == 6
    assert level.server.generation_tokens == level.total_output_tokens


async def test_failures_are_counted_with_their_first_error_and_nothing_hangs(
    sse_server: str,
) -> None:
    # Request numbers 3, 6, 9 get 503; 4 and 8 are cut; 5 and 10 stall.
    model = "m?itl_ms=2&fail_every=3&cut_every=4&stall_every=5"
    spec = _spec(sse_server, model, num_requests=10, concurrency=(2,), read_timeout_s=1.5)
    level = (await _run(spec)).levels[0]
    assert (level.completed, level.failed) == (3, 7)
    errors = sorted(level.errors)
    assert sum(error.startswith("HTTP 503") for error in errors) == 3
    # a stall hits the idle deadline (no token for read_timeout_s)
    assert sum("stalled" in error for error in errors) == 2
    cut = [e for e in errors if not e.startswith("HTTP 503") and "stalled" not in e]
    assert len(cut) == 2, errors
    assert level.ttft.count == level.e2el.count == 3


async def test_cancel_keeps_finished_requests_and_marks_partial(sse_server: str) -> None:
    spec = _spec(sse_server, "m?itl_ms=10", num_requests=500, concurrency=(2,))
    process = BenchProcess(spec)
    cancelled = False
    async with asyncio.timeout(120):
        async for event in process.events():
            if isinstance(event, BenchProgress) and event.done >= 4 and not cancelled:
                process.cancel()
                cancelled = True
    result = process.result
    assert result is not None and result.partial
    level = result.levels[0]
    assert level.partial
    assert 4 <= level.completed < 500
    assert level.failed == 0  # streams ended by the cancel are not failures
    assert level.cancelled <= 2


async def test_api_key_is_sent_as_bearer_and_never_recorded(
    sse_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-5f1c2d9e8a7b"
    monkeypatch.setenv("SERVEDECK_TEST_KEY", secret)
    spec = _spec(sse_server, "m?itl_ms=1", num_requests=2, api_key_env="SERVEDECK_TEST_KEY")
    events: list[object] = []
    result = await asyncio.wait_for(run_bench(spec, events.append), timeout=120)
    seen = httpx.get(sse_server + "/_seen").json()["auth"]
    assert seen == f"Bearer {secret}"
    append_result(result)
    assert secret not in json.dumps(result.to_dict())
    assert secret not in history_path().read_text()
    assert secret not in repr(events)


async def test_prompt_length_is_calibrated_with_tokenize(sse_server: str) -> None:
    result = await _run(_spec(sse_server, "m?itl_ms=1", input_tokens=100, num_requests=3))
    assert result.client["prompt_method"] == CALIBRATED_TOKENIZE
    assert result.levels[0].total_input_tokens == 3 * 100


async def test_without_tokenize_the_approximation_is_labelled(plain_sse_server: str) -> None:
    spec = _spec(plain_sse_server, "m?itl_ms=1&no_usage=1", input_tokens=50, num_requests=3)
    result = await _run(spec)
    assert result.client["prompt_method"] == (
        f"{APPROXIMATE} (server has no /tokenize; usage: the server reports no usage)"
    )
    level = result.levels[0]
    assert level.output_tokens_source == OUTPUT_TOKENS_FROM_CHUNKS
    assert level.total_output_tokens == 3 * 12
    assert level.server is not None  # /metrics still read


async def test_warmup_is_not_measured_and_model_is_discovered(sse_server: str) -> None:
    spec = _spec(sse_server, "", warmup_requests=2, num_requests=3)
    result = await _run(spec)
    assert result.context.model == "test-model?itl_ms=1"
    level = result.levels[0]
    assert level.completed == 3
    assert level.server is not None and level.server.requests == 3  # warm-ups excluded


async def test_chat_endpoint_open_loop_and_several_processes(sse_server: str) -> None:
    spec = _spec(
        sse_server, "m?itl_ms=2", endpoint="chat", request_rates=(40.0,), concurrency=(8,),
        num_requests=16, processes=2,
    )  # fmt: skip
    result = await _run(spec)
    level = result.levels[0]
    assert level.request_rate == 40.0
    assert (level.completed, level.failed) == (16, 0)
    assert result.client["processes"] == 2
    assert level.itl.count == 16 * 11


async def test_unreachable_server_is_one_line_error() -> None:
    spec = _spec("http://127.0.0.1:9", "", num_requests=1, connect_timeout_s=2.0)
    with pytest.raises(BenchError) as caught:
        await _run(spec)
    message = str(caught.value)
    assert "\n" not in message and "127.0.0.1:9" in message
