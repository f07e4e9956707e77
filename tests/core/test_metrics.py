"""Metrics from real vLLM /metrics captures, and the poller/probe against a real loopback server."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tui.core.errors import ServedeckError
from tui.serving.load.tracker import EngineStats, LoadTracker
from tui.serving.metrics import (
    MetricsPoller,
    compute_metrics,
    histogram_quantile,
    metrics_from_log,
    parse_metrics,
)
from tui.serving.readiness import ReadinessProbe

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"


def _scrapes() -> tuple:
    before = parse_metrics((FIXTURES / "metrics_before.txt").read_text(), at_s=100.0)
    after = parse_metrics((FIXTURES / "metrics.txt").read_text(), at_s=110.0)
    return before, after


def test_deltas_between_real_scrapes() -> None:
    before, after = _scrapes()
    metrics = compute_metrics(after, before)
    assert metrics.interval_s == 10.0
    assert metrics.prompt_tokens_per_s == pytest.approx(327 / 10)
    assert metrics.generation_tokens_per_s == pytest.approx(2080 / 10)
    assert (metrics.running_reqs, metrics.waiting_reqs) == (0, 0)
    assert metrics.kv_cache_usage_pct == 0.0 and metrics.preemptions_in_interval == 0
    # 33 first tokens: 1 <= 5 ms, 9 <= 10 ms, 32 <= 20 ms, 33 <= 40 ms
    assert metrics.ttft_p50_s == pytest.approx(0.01 + 0.01 * (16.5 - 9) / 23)
    assert metrics.ttft_p99_s == pytest.approx(0.02 + 0.02 * (32.67 - 32) / 1)
    assert metrics.itl_p50_s is not None and metrics.itl_p50_s <= 0.01
    single = compute_metrics(after)
    assert single.prompt_tokens_per_s is None and single.interval_s is None


def test_quantile_of_an_interval_ignores_older_observations() -> None:
    older = parse_metrics(
        "# TYPE x_seconds histogram\n"
        'x_seconds_bucket{le="0.1"} 100\nx_seconds_bucket{le="1"} 100\n'
        'x_seconds_bucket{le="+Inf"} 100\nx_seconds_count 100\nx_seconds_sum 1\n',
        at_s=0,
    )
    newer = parse_metrics(
        "# TYPE x_seconds histogram\n"
        'x_seconds_bucket{le="0.1"} 100\nx_seconds_bucket{le="1"} 110\n'
        'x_seconds_bucket{le="+Inf"} 110\nx_seconds_count 110\nx_seconds_sum 9\n',
        at_s=1,
    )
    whole = histogram_quantile(0.5, newer.buckets["x_seconds"])
    assert whole is not None and whole < 0.1
    delta = tuple(
        (u, c - dict(older.buckets["x_seconds"])[u]) for u, c in newer.buckets["x_seconds"]
    )
    assert histogram_quantile(0.5, delta) == pytest.approx(0.55)


def test_not_prometheus_text_is_one_line_error() -> None:
    with pytest.raises(ServedeckError, match="/metrics"):
        parse_metrics("<html>this is not it {{{\n")


def test_log_fallback() -> None:
    stats = EngineStats(46.8, 295.6, 1, 0, 0.0, 0.0, at_s=5.0)
    metrics = metrics_from_log(stats)
    assert metrics.source == "log" and metrics.generation_tokens_per_s == 295.6


@pytest.fixture
async def fake_vllm() -> AsyncIterator[tuple[str, dict]]:
    """A real aiohttp server on 127.0.0.1 replaying the captured vLLM pages."""
    state = {"page": (FIXTURES / "metrics_before.txt").read_text()}

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text=state["page"], content_type="text/plain")

    async def health(_: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "/models/tiny-llama"}]})

    app = web.Application()
    app.add_routes(
        [web.get("/metrics", metrics), web.get("/health", health), web.get("/v1/models", models)]
    )
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", state
    await runner.cleanup()


async def test_poller_over_http(fake_vllm: tuple[str, dict]) -> None:
    url, state = fake_vllm
    poller = MetricsPoller(url)
    first = await poller.poll()
    assert first.generation_tokens_per_s is None
    state["page"] = (FIXTURES / "metrics.txt").read_text()
    second = await poller.poll()
    assert second.generation_tokens_per_s is not None and second.generation_tokens_per_s > 0
    assert second.ttft_p50_s == pytest.approx(0.01 + 0.01 * (16.5 - 9) / 23)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_readiness_waits_for_the_log_then_polls(fake_vllm: tuple[str, dict]) -> None:
    url, _ = fake_vllm
    tracker = LoadTracker()
    tracker.apply("INFO 11-29 10:00:00 [api_server.py:1] vLLM API server version 0.33.0")
    probe = ReadinessProbe(url)
    assert not (await probe.check(tracker.snapshot())).checked
    tracker.apply(f"INFO 11-29 10:00:05 [api_server.py:1] Starting vLLM API server on {url}")
    result = await probe.check(tracker.snapshot())
    assert result.checked and result.ready and result.models == ("/models/tiny-llama",)
    refused = await ReadinessProbe(f"http://127.0.0.1:{_free_port()}").check(None)
    assert refused.checked and not refused.ready and refused.error


async def test_poller_error_names_the_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(ServedeckError, match=url):
        await MetricsPoller(url, timeout_s=1.0).poll()


def test_parsing_only_the_used_families_gives_the_same_numbers() -> None:
    """The poller filters the page before the reference parser; nothing it uses may change."""
    from tui.serving.metrics import USED_FAMILIES, parse_metrics

    text = (FIXTURES / "metrics.txt").read_text()
    full = parse_metrics(text, at_s=1.0)
    filtered = parse_metrics(text, at_s=1.0, families=USED_FAMILIES)
    wanted_values = {k: v for k, v in full.values.items() if k in USED_FAMILIES}
    wanted_buckets = {k: v for k, v in full.buckets.items() if k in USED_FAMILIES}
    assert filtered.values == wanted_values and filtered.buckets == wanted_buckets
    assert "vllm:generation_tokens" in filtered.values
    assert "vllm:time_to_first_token_seconds" in filtered.buckets
