"""Metric arithmetic, export names, history and /metrics parsing (no network)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from tui.bench.export import level_to_vllm
from tui.bench.history import append_result, history_path, read_history, runs_for_host
from tui.bench.metrics import Slos, latency_stats, percentile, summarize_level
from tui.bench.model import (
    OUTPUT_TOKENS_FROM_CHUNKS,
    BenchResult,
    RequestOutcome,
    RunContext,
    result_from_dict,
)
from tui.bench.server_view import parse_counters, server_delta
from tui.bench.workload import arrival_gaps_s

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"


def _fixture(name: str) -> Path:
    return FIXTURE_DIR / name


def test_percentile_interpolates_linearly_like_numpy_default() -> None:
    # Hand-computed: rank = (n - 1) * q / 100, then linear between neighbours.
    assert percentile([4, 1, 3, 2], 50) == pytest.approx(2.5)
    assert percentile([1, 2, 3, 4], 99) == pytest.approx(3.97)
    assert percentile([10, 20, 30, 40, 50], 90) == pytest.approx(46.0)
    assert percentile([10, 20, 30, 40, 50], 25) == pytest.approx(20.0)
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) == 0.0
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_latency_stats_use_population_std_in_ms() -> None:
    values = [0.010, 0.020, 0.030, 0.050]
    stats = latency_stats(values)
    assert stats.mean_ms == pytest.approx(27.5)
    assert stats.median_ms == pytest.approx(25.0)
    assert stats.std_ms == pytest.approx(statistics.pstdev(values) * 1000)
    assert stats.p99_ms == pytest.approx((0.030 + 0.97 * 0.020) * 1000)


def _outcome(ttft: float, latency: float, tokens: int, *, usage: bool = True) -> RequestOutcome:
    gaps = [(latency - ttft) / (tokens - 1)] * (tokens - 1)
    return RequestOutcome(
        success=True, start_s=0.0, ttft_s=ttft, latency_s=latency, itl_s=gaps,
        output_tokens=tokens if usage else 0, chunks=tokens, prompt_tokens=100,
        usage_seen=usage, end_s=latency,
    )  # fmt: skip


def test_level_summary_follows_vllm_definitions() -> None:
    outcomes = [_outcome(0.1, 1.1, 11), _outcome(0.2, 2.2, 21)]
    outcomes.append(RequestOutcome(success=False, ttft_s=9.0, error="HTTP 503: overloaded"))
    level = summarize_level(
        outcomes, concurrency=2, request_rate=None, burstiness=1.0, num_requests=3,
        duration_s=2.0, slos=Slos(ttft_ms=150),
    )  # fmt: skip
    assert (level.completed, level.failed) == (2, 1)
    assert level.errors == ("HTTP 503: overloaded",)
    assert level.ttft.mean_ms == pytest.approx(150.0)  # the failure's 9 s is excluded
    assert level.tpot.mean_ms == pytest.approx(100.0)  # (1.1-0.1)/10 and (2.2-0.2)/20
    assert level.itl.count == 30
    assert level.output_throughput == pytest.approx(32 / 2.0)
    assert level.request_throughput == pytest.approx(1.0)
    assert level.total_token_throughput == pytest.approx((200 + 32) / 2.0)
    assert level.request_goodput == pytest.approx(0.5)  # only the 100 ms TTFT meets 150 ms
    assert level.decode_tok_s_per_stream == pytest.approx(10.0)
    assert level.prefill_tok_s_per_request == pytest.approx((1000 + 500) / 2)


def test_output_tokens_fall_back_to_chunks_with_a_label() -> None:
    level = summarize_level(
        [_outcome(0.1, 1.1, 11, usage=False)], concurrency=1, request_rate=None,
        burstiness=1.0, num_requests=1, duration_s=1.0,
    )  # fmt: skip
    assert level.total_output_tokens == 11
    assert level.output_tokens_source == OUTPUT_TOKENS_FROM_CHUNKS


def _result(host: str = "box", run_id: str = "r1") -> BenchResult:
    level = summarize_level(
        [_outcome(0.1, 1.1, 11)], concurrency=1, request_rate=None, burstiness=1.0,
        num_requests=1, duration_s=1.1,
    )  # fmt: skip
    return BenchResult(
        run_id=run_id, started_at="2026-11-29T16:00:00+00:00", preset="quick",
        endpoint="completions", input_tokens=100, output_tokens=11, temperature=0.0,
        ignore_eos=True, context=RunContext(host=host, model="m", tp=8, ep=True),
        levels=(level,),
    )  # fmt: skip


def test_export_uses_vllm_field_names() -> None:
    reference = json.loads(_fixture("bench_serve_result.json").read_text())
    exported = level_to_vllm(_result(), _result().levels[0])
    ours = {
        "completed", "failed", "duration", "num_prompts", "max_concurrency", "burstiness",
        "request_rate", "request_throughput", "request_goodput", "output_throughput",
        "total_token_throughput", "total_input_tokens", "total_output_tokens", "backend",
        "model_id", "date",
    }  # fmt: skip
    for metric in ("ttft", "tpot", "itl"):
        ours |= {f"{kind}_{metric}_ms" for kind in ("mean", "median", "std", "p99")}
    assert ours <= set(reference), sorted(ours - set(reference))
    assert ours <= set(exported), sorted(ours - set(exported))
    assert exported["request_rate"] == reference["request_rate"] == "inf"
    assert exported["median_tpot_ms"] == pytest.approx(100.0)


def test_history_appends_and_tolerates_a_truncated_last_line() -> None:
    append_result(_result(run_id="a"))
    append_result(_result(host="other", run_id="b"))
    append_result(_result(run_id="c"))
    path = history_path()
    with path.open("ab") as handle:
        handle.write(json.dumps(_result(run_id="torn").to_dict()).encode()[:57])
    runs = read_history()
    assert [run.run_id for run in runs] == ["a", "b", "c"]
    assert runs[0] == _result(run_id="a")  # a lossless round trip
    assert [run.run_id for run in runs_for_host("box")] == ["c", "a"]
    append_result(_result(run_id="d"))  # the torn line is closed, not glued to this one
    assert [run.run_id for run in read_history()] == ["a", "b", "c", "d"]


def test_round_trip_of_a_result_dict() -> None:
    result = _result()
    assert result_from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_server_counters_from_real_vllm_metrics() -> None:
    before = parse_counters(_fixture("metrics_before.txt").read_text())
    after = parse_counters(_fixture("metrics.txt").read_text())
    assert after["vllm:generation_tokens_total"] == 2080.0
    assert after["vllm:request_decode_time_seconds_count"] == 33.0
    view = server_delta(before, after)
    assert view is not None
    assert view.generation_tokens == after["vllm:generation_tokens_total"] - before.get(
        "vllm:generation_tokens_total", 0.0
    )
    if view.requests:
        assert view.mean_decode_ms is not None and view.mean_decode_ms > 0
    assert server_delta(None, after) is None


@pytest.mark.parametrize("burstiness", [1.0, 4.0, 0.5])
def test_arrival_gaps_have_the_requested_rate_and_burstiness(burstiness: float) -> None:
    gaps = arrival_gaps_s(10.0, burstiness, seed=3)
    sample = [next(gaps) for _ in range(40_000)]
    mean = statistics.fmean(sample)
    assert mean == pytest.approx(0.1, rel=0.03)
    # gamma(k, theta): variance = k theta^2 = mean^2 / k
    assert statistics.pvariance(sample) == pytest.approx(0.01 / burstiness, rel=0.1)
    assert math.isfinite(mean)
