"""Full distributions of a level against the real test SSE server: asked percentiles (p99.9
too), time to second token, per-user tok/s and each request's HTTP phases, on both
transports (aiohttp's trace hooks, httpcore's trace extension)."""

from __future__ import annotations

import asyncio

import pytest

from tui.bench.driver import run_bench
from tui.bench.report import report_lines
from tui.bench.workload import BenchSpec


@pytest.mark.parametrize("transport", ["httpx-aiohttp", "httpx"])
async def test_a_level_carries_ttst_user_speed_and_http_phases(
    sse_server: str, transport: str
) -> None:
    spec = BenchSpec(
        base_url=sse_server, model="m?ttft_ms=40&itl_ms=10", input_tokens=16, output_tokens=8,
        concurrency=(2,), num_requests=6, warmup_requests=1, transport=transport,
        percentiles=(50.0, 90.0, 95.0, 99.0, 99.9), read_timeout_s=60.0,
    )  # fmt: skip
    result = await asyncio.wait_for(run_bench(spec), timeout=60)
    (level,) = result.levels
    assert level.completed == 6
    assert [p for p, _ in level.ttft.percentiles_ms] == [50.0, 90.0, 95.0, 99.0, 99.9]
    # the second token comes one inter-token gap (10 ms) after the first
    assert level.ttst is not None and level.ttst.count == 6
    assert level.ttst.median_ms >= level.ttft.median_ms + 8
    speed = level.user_tok_s
    assert speed is not None and speed.count == 6 and len(speed.percentiles) == 5
    assert 0 < speed.median < 8 / 0.1  # 8 tokens over at least 40 + 7 x 10 ms
    http = level.http
    assert http is not None and http.wait.count == 6 and http.connect.count == 6
    assert 1 <= http.new_connections <= 2  # two streams; the warm-up's may be kept alive
    # the server sends its headers before its first token: the wait is not the TTFT
    assert http.wait.median_ms < level.ttft.median_ms - 20
    text = "\n".join(report_lines(level))
    assert "TTST ms" in text and "tok/s/u" in text and "wait ms" in text and "p99.9" in text
