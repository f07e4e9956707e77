"""Per-engine figures of a data-parallel /metrics page (vLLM's `engine` label), not a sum."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tui.serving.engines import EngineMetrics, idle_engine_warnings
from tui.serving.metrics import compute_metrics, parse_metrics

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"


def two_engine_page(name: str, gauges: dict[tuple[str, str], float]) -> str:
    """The real capture with every engine="0" sample repeated as engine="1" (as vLLM's
    per-engine label values write a DP=2 page), the given (family, engine) gauges set."""
    out = []
    for line in (FIXTURES / name).read_text().splitlines():
        copies = [line]
        if 'engine="0"' in line and not line.startswith("#"):
            copies.append(line.replace('engine="0"', 'engine="1"'))
        for copy in copies:
            for (family, engine), value in gauges.items():
                if re.match(rf'{re.escape(family)}\{{engine="{engine}",', copy):
                    copy = copy.rsplit(" ", 1)[0] + f" {value}"
            out.append(copy)
    return "\n".join(out) + "\n"


STARVED = {
    ("vllm:num_requests_running", "0"): 8,
    ("vllm:num_requests_waiting", "0"): 12,
    ("vllm:kv_cache_usage_perc", "0"): 1.0,
    ("vllm:num_requests_running", "1"): 0,
    ("vllm:num_requests_waiting", "1"): 0,
    ("vllm:kv_cache_usage_perc", "1"): 0.0,
}


def test_each_engine_keeps_its_own_figures() -> None:
    metrics = compute_metrics(parse_metrics(two_engine_page("metrics.txt", STARVED), at_s=1.0))
    assert [e.engine for e in metrics.engines] == ["0", "1"]
    first, second = metrics.engines
    assert (first.running_reqs, first.waiting_reqs, first.kv_cache_usage_pct) == (8, 12, 100.0)
    assert (second.running_reqs, second.waiting_reqs, second.kv_cache_usage_pct) == (0, 0, 0.0)
    assert first.model_name == "/models/tiny-llama"
    # the sum line: requests add up; KV is the engines' mean, never 100 % + 0 % = 100 %
    assert (metrics.running_reqs, metrics.waiting_reqs) == (8, 12)
    assert metrics.kv_cache_usage_pct == 50.0
    assert idle_engine_warnings(metrics.engines) == ("engine 1 idle while engine 0 has 12 waiting",)


def test_rates_per_engine_over_the_interval() -> None:
    before = parse_metrics(two_engine_page("metrics_before.txt", {}), at_s=100.0)
    after = parse_metrics(two_engine_page("metrics.txt", {}), at_s=110.0)
    metrics = compute_metrics(after, before)
    assert metrics.generation_tokens_per_s == pytest.approx(2 * 2080 / 10)
    for engine in metrics.engines:
        assert engine.generation_tokens_per_s == pytest.approx(2080 / 10)
        assert engine.ttft_p50_s == pytest.approx(metrics.ttft_p50_s)


def test_one_engine_is_one_row_and_no_warning() -> None:
    metrics = compute_metrics(parse_metrics((FIXTURES / "metrics.txt").read_text(), at_s=1.0))
    assert [e.engine for e in metrics.engines] == ["0"]
    assert idle_engine_warnings(metrics.engines) == ()


def _engine(name: str, running: int | None, waiting: int | None) -> EngineMetrics:
    return EngineMetrics(name, None, running, waiting, None, None, None, None, None)


def test_unknown_is_not_idle_and_no_queue_is_no_warning() -> None:
    assert idle_engine_warnings((_engine("0", 3, 5), _engine("1", None, None))) == ()
    assert idle_engine_warnings((_engine("0", 3, 0), _engine("1", 0, 0))) == ()
    three = (_engine("0", 3, 5), _engine("1", 0, 0), _engine("2", 0, 9))
    assert idle_engine_warnings(three) == ("engine 1 idle while engine 2 has 9 waiting",)


def test_the_serving_strip_draws_one_row_per_engine_and_the_warning() -> None:
    from widgets.load_strip import render_strip

    metrics = compute_metrics(parse_metrics(two_engine_page("metrics.txt", STARVED), at_s=1.0))
    lines = render_strip(None, metrics).plain.splitlines()
    assert "run 8  wait 12  KV 50.0%" in lines[1]
    assert lines[2].strip().startswith("engine 0: run 8  wait 12  KV 100.0%")
    assert lines[3].strip().startswith("engine 1: run 0  wait 0  KV 0.0%")
    assert lines[4].strip() == "⚠ engine 1 idle while engine 0 has 12 waiting"
    single = compute_metrics(parse_metrics((FIXTURES / "metrics.txt").read_text(), at_s=1.0))
    assert len(render_strip(None, single).plain.splitlines()) == 2  # one engine: no rows
