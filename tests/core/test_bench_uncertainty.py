"""The interval math: coverage of known populations over many seeded samples, the
order-statistic interval of a percentile, Wilson's interval and the SLO verdicts, the report's lines."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.bench.metrics import Slos, summarize_level
from tui.bench.model import RequestOutcome, level_from_dict
from tui.bench.report import interval_lines, report_lines
from tui.bench.runner import level_to_dict
from tui.bench.uncertainty import (
    MET,
    MISSED,
    UNDECIDED,
    LevelUncertainty,
    PercentileRanks,
    figure_name,
    mean_interval,
    metric_intervals,
    percentile_interval,
    requests_for_upper_bound,
    requests_to_meet,
    slo_attainment,
    wilson,
)


def test_mean_and_median_intervals_cover_an_exponential_population_95_percent() -> None:
    rng = random.Random(11)
    ranks = PercentileRanks()
    trials, covered_mean, covered_median = 400, 0, 0
    truth_median = 0.6931471805599453  # ln 2 at rate 1
    for _ in range(trials):
        sample = sorted(rng.expovariate(1.0) for _ in range(60))
        low, high = mean_interval(sample)
        covered_mean += low <= 1.0 <= high
        low, high = percentile_interval(sample, 50, ranks)
        covered_median += low <= truth_median <= high
    assert 0.91 <= covered_mean / trials <= 0.98
    assert 0.91 <= covered_median / trials <= 0.99


def test_the_order_statistic_interval_is_near_resampling_outright_at_200() -> None:
    rng = random.Random(2)
    sample = sorted(rng.lognormvariate(0, 1) for _ in range(200))
    resampled = sorted(sorted(rng.choices(sample, k=200))[round(199 * 0.9)] for _ in range(4000))
    low, high = percentile_interval(sample, 90, PercentileRanks())
    assert sample.index(low) == pytest.approx(sample.index(resampled[100]), abs=3)
    assert sample.index(high) == pytest.approx(sample.index(resampled[3899]), abs=3)


def test_mean_interval_is_t_for_few_requests_and_normal_for_many() -> None:
    low, high = mean_interval([1.0, 2.0, 3.0])  # sd 1, t(2) = 4.303
    assert (low, high) == pytest.approx((2 - 4.303 / 3**0.5, 2 + 4.303 / 3**0.5))
    many = [float(i % 10) for i in range(10_000)]
    low, high = mean_interval(many)
    half = 1.96 * statistics.stdev(many) / 100
    assert high - low == pytest.approx(2 * half, rel=1e-3)


def test_wilson_has_width_when_every_request_met_and_verdicts_follow_it() -> None:
    low, high = wilson(20, 20)
    assert low == pytest.approx(0.839, abs=1e-3) and high == 1.0
    assert slo_attainment(20, 20, 0.99).verdict == UNDECIDED
    assert slo_attainment(1000, 1000, 0.99).verdict == MET
    assert slo_attainment(900, 1000, 0.99).verdict == MISSED


def _outcomes(n: int, seed: int) -> list[RequestOutcome]:
    rng = random.Random(seed)
    found = []
    for i in range(n):
        ttft = 0.02 + rng.expovariate(50)
        found.append(
            RequestOutcome(
                success=True,
                start_s=i,
                ttft_s=ttft,
                latency_s=ttft + 0.3,
                output_tokens=31,
                usage_seen=True,
                prompt_tokens=8,
                end_s=i + ttft + 0.3,
            )
        )
    return found


def test_a_level_carries_its_intervals_through_json_and_the_report() -> None:
    level = summarize_level(
        _outcomes(40, 1), concurrency=1, request_rate=None, burstiness=1.0,
        num_requests=40, duration_s=40.0, slos=Slos(ttft_ms=60), seed=9,
    )  # fmt: skip
    found = level.uncertainty
    assert found is not None and found.seed == 9
    ttft = found.metric("ttft_ms")
    assert ttft is not None
    mean = ttft.get("mean")
    assert mean is not None and mean.low < level.ttft.mean_ms < mean.high
    assert level_from_dict(level_to_dict(level)) == level
    again = summarize_level(
        _outcomes(40, 1), concurrency=1, request_rate=None, burstiness=1.0,
        num_requests=40, duration_s=40.0, slos=Slos(ttft_ms=60), seed=9,
    )  # fmt: skip
    assert again.uncertainty == found  # seeded
    lines = report_lines(level)
    assert any(line.startswith("  TTFT ms mean ") for line in lines), lines
    assert any("target 99%: " in line for line in lines)
    assert all(len(line) <= 80 for line in lines)


# --- A percentile of few requests: open above, never falsely tight -------------------

_PERCENTILES = st.sampled_from((50.0, 90.0, 95.0, 99.0, 99.9)) | st.floats(1.0, 99.99)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 5000), percentile=_PERCENTILES, seed=st.integers(0, 2**16))
def test_a_percentile_is_open_above_exactly_while_its_largest_value_cannot_bound_it(
    n: int, percentile: float, seed: int
) -> None:
    """Generated sample sizes: with fewer requests than an upper bound needs (the largest
    of n falls below the true percentile more than 2.5 % of the time: q^n > 0.025), the
    interval is open above and says how many it needs; with enough, it is closed."""
    rng = random.Random(seed)
    values = [rng.lognormvariate(0, 1) for _ in range(n)]
    found = metric_intervals("ttft_ms", values, [percentile], PercentileRanks())
    assert found is not None
    interval = found.get(figure_name(percentile))
    assert interval is not None and interval.requests == n
    q = percentile / 100
    needed = requests_for_upper_bound(percentile)
    assert needed is not None and q**needed <= 0.025 < q ** (needed - 1)
    if n < needed:
        assert interval.high is None and interval.needed == needed
        assert interval.low <= interval.value
        assert interval.unknown_above() == (f"upper bound unknown: {n} requests, need >= {needed}")
    else:
        assert interval.high is not None and interval.low <= interval.value <= interval.high
        assert interval.unknown_above() == ""


def test_p99_of_24_requests_is_open_above_where_a_bootstrap_covered_0_to_18_percent() -> None:
    """The coverage run's case: 24 requests, p99 is their largest; P(largest < true p99)
    = 0.99^24 = 79 %, so a closed interval would miss the truth most of the time. Open
    above, it covers an exponential population's true p99 in >= 95 % of seeded runs."""
    rng = random.Random(4)
    ranks = PercentileRanks()
    truth = -math.log(0.01)  # p99 of Exp(1)
    covered, trials = 0, 400
    for _ in range(trials):
        found = metric_intervals("ttft_ms", [rng.expovariate(1.0) for _ in range(24)], [99], ranks)
        assert found is not None
        p99 = found.get("p99")
        assert p99 is not None and p99.high is None and p99.needed == 368
        covered += p99.covers(truth)
    assert covered / trials >= 0.95
    lines = interval_lines(LevelUncertainty(0.95, 1000, 1, (found,), None))
    assert "    p99: upper bound unknown: 24 requests, need >= 368" in lines
    assert any(line.startswith("  TTFT ms") and "p99 >=" in line for line in lines), lines


@settings(max_examples=200, deadline=None)
@given(total=st.integers(1, 2000), target=st.sampled_from((0.5, 0.9, 0.95, 0.99, 0.999)))
def test_a_p99_objective_is_too_few_requests_to_decide_below_the_count_that_could_meet_it(
    total: int, target: float
) -> None:
    """Generated sizes: every request meeting the objective shows it met only from the
    count `requests_to_meet` names; below it the verdict says so, with the count."""
    needed = requests_to_meet(target)
    assert needed is not None
    found = slo_attainment(total, total, target)
    if total < needed:
        assert found.verdict == UNDECIDED
        assert found.describe() == f"{UNDECIDED} ({total} requests, need >= {needed})"
    else:
        assert found.verdict == MET and found.describe() == MET
    assert wilson(needed, needed)[0] >= target > wilson(needed - 1, needed - 1)[0]


# --- Requests that share the server's state: the block bootstrap in send order ------


def _drifting_tpots(rng: random.Random, n: int, rho: float = 0.5) -> list[float]:
    """Per-request TPOTs (ms) of one run whose decode step drifts: an AR(1) around 4.27 ms."""
    drift, found = rng.gauss(0, 0.1), []
    for _ in range(n):
        drift = rho * drift + math.sqrt(1 - rho * rho) * rng.gauss(0, 0.1)
        found.append(4.27 + drift)
    return found


def test_tpot_intervals_cover_a_drifting_decode_step_where_independent_resampling_did_not() -> None:
    """Generated runs (seeded): 300 runs of 200 requests, each request's TPOT an AR(1)
    series (lag-1 0.5) around the true 4.27 ms. The mean's and median's intervals over
    the requests in send order cover it in >= 90 %; an interval that takes the requests
    as independent covered about 74 % (the mean) and 75 % (the median)."""
    rng, ranks = random.Random(43), PercentileRanks()
    runs, covered_mean, covered_median, independent = 300, 0, 0, 0
    for _ in range(runs):
        values = _drifting_tpots(rng, 200)
        found = metric_intervals("tpot_ms", values, [90.0], ranks)
        assert found is not None
        mean, median = found.get("mean"), found.get("p50")
        assert mean is not None and median is not None
        covered_mean += mean.covers(4.27)
        covered_median += median.covers(4.27)
        low, high = mean_interval(values)
        independent += low <= 4.27 <= high
    assert covered_mean / runs >= 0.9, covered_mean / runs
    assert covered_median / runs >= 0.9, covered_median / runs
    assert independent / runs <= 0.8  # the old interval, for the record


def test_independent_requests_keep_their_width_under_the_block_bootstrap() -> None:
    """TTFT and E2EL vary request by request (independent prompt and output lengths): the
    block bootstrap keeps their coverage and widens their intervals by a few percent."""
    rng, ranks = random.Random(7), PercentileRanks()
    runs, covered, widths_new, widths_old = 300, 0, 0.0, 0.0
    for _ in range(runs):
        values = [rng.expovariate(1.0) for _ in range(24)]
        found = metric_intervals("ttft_ms", values, [90.0], ranks)
        assert found is not None
        mean = found.get("mean")
        assert mean is not None and mean.high is not None
        covered += mean.covers(1.0)
        low, high = mean_interval(values)
        widths_new += mean.high - mean.low
        widths_old += high - low
    assert covered / runs >= 0.92
    assert widths_new / widths_old <= 1.1
