"""Parity with `vllm bench serve`'s report: percentiles as asked, E2EL, input and total tok/s.

vLLM (`vllm/benchmarks/serve.py`, calculate_metrics) reports mean, median, std and
`p{P}_{metric}_ms` for each `--metric-percentiles` P (np.percentile, linear), and
total_token_throughput = (input + output tokens) / duration.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.bench.export import level_to_vllm
from tui.bench.metrics import latency_stats, percentile, summarize_level
from tui.bench.model import (
    BenchResult,
    LatencyStats,
    RequestOutcome,
    RunContext,
    level_from_dict,
    percentile_word,
    result_from_dict,
)
from tui.bench.report import report_lines
from tui.commands.bench_spec import parse_percentiles
from tui.core.errors import UsageError

ASKED = (50.0, 90.0, 95.0, 99.0)


def _outcomes(prompt_tokens: int, output_tokens: int, count: int) -> list[RequestOutcome]:
    return [
        RequestOutcome(
            success=True,
            ttft_s=0.1 + i / 100,
            latency_s=0.1 + i / 100 + 0.02 * (output_tokens - 1),
            itl_s=[0.02] * (output_tokens - 1),
            output_tokens=output_tokens,
            chunks=output_tokens,
            prompt_tokens=prompt_tokens,
            usage_seen=True,
        )
        for i in range(count)
    ]


def _level(prompt_tokens: int = 1000, output_tokens: int = 11, count: int = 8):  # type: ignore[no-untyped-def]
    return summarize_level(
        _outcomes(prompt_tokens, output_tokens, count), concurrency=1, request_rate=None,
        burstiness=1.0, num_requests=count, duration_s=4.0, percentiles=ASKED,
    )  # fmt: skip


def _result(level) -> BenchResult:  # type: ignore[no-untyped-def]
    return BenchResult(
        run_id="r1", started_at="2026-12-06T10:00:00+00:00", preset="quick",
        endpoint="completions", input_tokens=1000, output_tokens=11, temperature=0.0,
        ignore_eos=True, context=RunContext(model="m"), levels=(level,),
    )  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 1e4, allow_nan=False), min_size=2, max_size=60),
    st.integers(1, 99),
)
def test_percentile_is_numpys_linear_interpolation(values: list[float], q: int) -> None:
    # statistics' "inclusive" quantiles are numpy's default (linear) method at whole percents
    expected = statistics.quantiles(values, n=100, method="inclusive")[q - 1]
    assert percentile(values, q) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_latency_stats_keep_each_asked_percentile() -> None:
    values = [i / 1000 for i in range(1, 101)]
    stats = latency_stats(values, ASKED)
    assert [p for p, _ in stats.percentiles_ms] == list(ASKED)
    by_p = dict(stats.percentiles_ms)
    assert by_p[95.0] == pytest.approx(percentile(values, 95) * 1000)
    assert by_p[50.0] == pytest.approx(stats.median_ms)


def test_export_uses_vllms_keys_for_the_asked_percentiles_and_totals() -> None:
    level = _level()
    record = level_to_vllm(_result(level), level)
    for metric in ("ttft", "tpot", "itl", "e2el"):
        for word in ("50", "90", "95", "99"):
            assert f"p{word}_{metric}_ms" in record
        assert f"mean_{metric}_ms" in record and f"median_{metric}_ms" in record
    assert record["total_token_throughput"] == pytest.approx((8 * 1000 + 8 * 11) / 4.0)
    assert record["servedeck"]["input_tok_s"] == pytest.approx(8 * 1000 / 4.0)
    assert record["mean_e2el_ms"] == pytest.approx(
        sum(o.latency_s for o in _outcomes(1000, 11, 8)) / 8 * 1000
    )


def test_fractional_percentile_is_spelled_like_vllm() -> None:
    assert percentile_word(99.0) == "99" and percentile_word(99.9) == "99.9"
    level = summarize_level(
        _outcomes(10, 5, 4), concurrency=1, request_rate=None, burstiness=1.0,
        num_requests=4, duration_s=1.0, percentiles=(99.9,),
    )  # fmt: skip
    assert "p99.9_itl_ms" in level_to_vllm(_result(level), level)


def test_percentiles_survive_the_history_round_trip() -> None:
    level = _level()
    again = result_from_dict(_result(level).to_dict()).levels[0]
    assert again == level  # tuples of (percentile, ms), not lists


def test_a_run_stored_before_percentiles_exports_p99_and_no_input_rate() -> None:
    stored = _result(_level()).to_dict()["levels"][0]
    for metric in ("ttft", "tpot", "itl", "e2el"):
        del stored[metric]["percentiles_ms"]
    del stored["input_tok_s"]
    old = level_from_dict(stored)
    record = level_to_vllm(_result(old), old)
    assert "p99_ttft_ms" in record and "p95_ttft_ms" not in record
    assert record["servedeck"]["input_tok_s"] is None  # unknown, never 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=12, unique=True))
def test_report_fits_80_columns_for_any_percentiles(asked: list[float]) -> None:
    level = summarize_level(
        _outcomes(123456, 300, 6), concurrency=1024, request_rate=None, burstiness=1.0,
        num_requests=6, duration_s=0.001, percentiles=sorted(asked),
    )  # fmt: skip
    lines = report_lines(level)
    assert all(len(line) <= 80 for line in lines), lines
    heads = [line.split() for line in lines if line.split()[-1].startswith("p")]
    assert sum(len(head) for head in heads) == len(asked) + 2 + 1  # mean, median, the load


def test_prefill_report_shows_input_rate_and_tpot_unknown() -> None:
    level = _level(prompt_tokens=8192, output_tokens=1, count=4)  # a prefill run
    lines = report_lines(level)
    tpot = next(line for line in lines if line.startswith("  TPOT"))
    assert tpot.split()[2:] == ["n/a"] * 6  # mean, median, p50, p90, p95, p99
    rates = next(line for line in lines if line.startswith("  tok/s "))
    assert "input 8,192.0" in rates and "total" in rates


def test_nothing_completed_reports_n_a_never_zero() -> None:
    empty = replace(_level(), completed=0, ttft=LatencyStats(), tpot=LatencyStats(),
                    itl=LatencyStats(), e2el=LatencyStats(), uncertainty=None)  # fmt: skip
    lines = report_lines(empty)
    assert "0.00" not in "\n".join(lines)
    assert lines[-1].split() == ["tok/s", "input", "n/a", "output", "n/a", "total", "n/a"]


@pytest.mark.parametrize(
    ("text", "message"),
    [("50,abc", "expects numbers"), ("50,101", "within 0..100"), (",", "at least one")],
)
def test_bad_percentiles_are_one_line_usage_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_percentiles(text)


def test_percentiles_are_sorted_and_unique() -> None:
    assert parse_percentiles("99,50,90,99") == (50.0, 90.0, 99.0)
    assert parse_percentiles(None) is None


def test_profile_sets_the_percentiles(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tui.core.config import DEFAULT_PERCENTILES, load_profile_file

    path = tmp_path / "box.toml"
    path.write_text("[benchmark]\npercentiles = [99, 50, 90.5]\n")
    assert load_profile_file(path).benchmark.percentiles == (50.0, 90.5, 99.0)
    path.write_text("")
    assert load_profile_file(path).benchmark.percentiles == DEFAULT_PERCENTILES


@pytest.mark.parametrize(
    ("value", "expected"),
    [("[50, 120]", "within 0..100"), ("[]", "at least one"), ("['p99']", "array of numbers")],
)
def test_bad_profile_percentiles_name_the_file_and_field(  # type: ignore[no-untyped-def]
    tmp_path, value: str, expected: str
) -> None:
    from tui.core.config import load_profile_file
    from tui.core.errors import ProfileError

    path = tmp_path / "box.toml"
    path.write_text(f"[benchmark]\npercentiles = {value}\n")
    with pytest.raises(ProfileError) as raised:
        load_profile_file(path)
    message = str(raised.value)
    assert message.startswith(str(path)) and "benchmark.percentiles" in message
    assert expected in message and "\n" not in message


# What `vllm bench serve` (0.32) writes without options: --metric-percentiles "99" for
# --percentile-metrics "ttft,tpot,itl" (its serve.py argparse defaults).
VLLM_DEFAULT_PERCENTILES = (99.0,)
VLLM_DEFAULT_METRICS = ("ttft", "tpot", "itl")


def test_default_percentiles_hold_every_figure_vllm_prints_by_default() -> None:
    """servedeck's default (90, 95, 99) is vLLM's default p99 plus the tail an operator
    reads between median and p99; every key vLLM writes by default is in the export."""
    from tui.core.config import DEFAULT_PERCENTILES

    assert set(VLLM_DEFAULT_PERCENTILES) <= set(DEFAULT_PERCENTILES)
    level = summarize_level(
        _outcomes(100, 11, 8), concurrency=1, request_rate=None, burstiness=1.0,
        num_requests=8, duration_s=4.0,
    )  # fmt: skip
    record = level_to_vllm(_result(level), level)
    for metric in VLLM_DEFAULT_METRICS:
        for stat in ("mean", "median", "std"):
            assert f"{stat}_{metric}_ms" in record
        for p in VLLM_DEFAULT_PERCENTILES:
            assert f"p{percentile_word(p)}_{metric}_ms" in record
