"""The Deck's serving line: the latency figures README promises (TTFT and ITL)."""

from __future__ import annotations

from tui.serving.metrics import ServerMetrics
from widgets.load_strip import render_strip


def _metrics(itl_p50_s: float | None) -> ServerMetrics:
    return ServerMetrics(
        running_reqs=3,
        waiting_reqs=0,
        kv_cache_usage_pct=12.5,
        prompt_tokens_per_s=1200.0,
        generation_tokens_per_s=640.0,
        preemptions_total=0,
        preemptions_in_interval=0,
        ttft_p50_s=0.120,
        ttft_p90_s=0.2,
        ttft_p99_s=0.3,
        itl_p50_s=itl_p50_s,
        itl_p90_s=None,
        itl_p99_s=None,
        interval_s=1.0,
        source="metrics",
        at_s=0.0,
    )


def test_serving_line_shows_ttft_and_itl() -> None:
    line = render_strip(None, _metrics(0.025)).plain.splitlines()[-1]
    assert "TTFT p50 120 ms" in line
    assert "ITL p50 25 ms" in line


def test_serving_line_says_an_unknown_itl_is_unknown() -> None:
    line = render_strip(None, _metrics(None)).plain.splitlines()[-1]
    assert "ITL p50 ?" in line and "ITL p50 0" not in line  # unknown is ?, never 0 ms
