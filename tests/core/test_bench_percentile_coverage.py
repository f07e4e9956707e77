"""The median's interval over one short run covers the true median in >= 95 % of
generated runs: 24 requests a run, as tests/perf/bench_interval_coverage.py sends.

The runs are drawn the way the simulator's TPOT came out once its steps kept absolute
deadlines: a request's TPOT is the 4 ms step plus its first and last token's lateness
over its gaps (tight for long requests, wider for short ones), a few late starts make
a tail, and the client's timer grain (1 us) leaves many equal values (interquartile
range 45 us and up to a dozen equal values in 480, as the bench's population had). A continuous
population checks the same without ties. Counted over 2,400 seeded runs each, each side of the truth, through
summarize_level, the path a bench level takes (each level its own seed)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.bench.metrics import summarize_level
from tui.bench.model import RequestOutcome
from tui.bench.uncertainty import order_statistic_ranks, requests_for_upper_bound

STEP_S = 0.004
REQUESTS = 24
RUNS = 2400


def _step_tpot_s(rng: random.Random) -> tuple[float, int]:
    """One request's TPOT (s) and output tokens: the step plus (last - first token's
    lateness) / gaps, a late start now and then, at the client timer's 1 us grain."""
    tokens = rng.randint(2, 40)
    lateness_s = rng.expovariate(1 / 500e-6) - rng.expovariate(1 / 500e-6)
    tpot_s = STEP_S + lateness_s / (tokens - 1)
    if rng.random() < 0.08:
        tpot_s += rng.expovariate(1 / 300e-6)
    return round(tpot_s, 6), tokens


def _lognormal_tpot_s(rng: random.Random) -> tuple[float, int]:
    return STEP_S * rng.lognormvariate(0.0, 0.05), rng.randint(2, 40)


def _outcomes(draws: list[tuple[float, int]]) -> list[RequestOutcome]:
    found = []
    for i, (tpot_s, tokens) in enumerate(draws):
        ttft_s = 0.012
        latency_s = ttft_s + tpot_s * (tokens - 1)
        found.append(
            RequestOutcome(
                success=True,
                start_s=float(i),
                ttft_s=ttft_s,
                latency_s=latency_s,
                output_tokens=tokens,
                usage_seen=True,
                prompt_tokens=32,
                end_s=i + latency_s,
            )
        )
    return found


def _misses(draw: Callable[[random.Random], tuple[float, int]], seed: int) -> tuple[float, float]:
    """The shares of runs whose median interval lies above / below the true median."""
    rng = random.Random(seed)
    population = sorted(draw(rng)[0] for _ in range(100_001))
    truth_ms = 1000 * population[50_000]
    above = below = 0
    for run in range(RUNS):
        level = summarize_level(
            _outcomes([draw(rng) for _ in range(REQUESTS)]), concurrency=1,
            request_rate=None, burstiness=1.0, num_requests=REQUESTS, duration_s=10.0,
            percentiles=(50.0, 90.0), seed=run,
        )  # fmt: skip
        assert level.uncertainty is not None
        tpot = level.uncertainty.metric("tpot_ms")
        median = tpot.get("p50") if tpot is not None else None
        assert median is not None and median.high is not None
        above += median.low > truth_ms
        below += median.high < truth_ms
    return above / RUNS, below / RUNS


def test_the_median_of_24_tied_step_tpots_is_covered_95_percent() -> None:
    """The bench's 85 % (40 runs): the bootstrap's ranks of 24 (x(8) or x(9) up to x(17)
    or x(18), by its draws) missed here 3.3 % above and 2.0 % below (94.7 % covered);
    the binomial's x(7)..x(18) miss 1.0 % and 0.8 % (its exact level at 24 is 97.7 %)."""
    above, below = _misses(_step_tpot_s, 43)
    assert above + below <= 0.05 and above <= 0.025 and below <= 0.025, (above, below)


def test_the_median_of_24_continuous_values_is_covered_95_percent() -> None:
    """Without ties the bootstrap's ranks missed 4.0 % above, 2.1 % below (93.9 %)."""
    above, below = _misses(_lognormal_tpot_s, 7)
    assert above + below <= 0.05 and above <= 0.025 and below <= 0.025, (above, below)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 300), q=st.sampled_from((0.5, 0.9, 0.99)) | st.floats(0.01, 0.99))
def test_the_ranks_are_the_binomials_tightest_equal_tails(n: int, q: float) -> None:
    """Generated sizes and quantiles: each end is the tightest rank whose tail, summed
    outright from the binomial, is <= 2.5 %; open above exactly where the upper bound
    needs more requests (requests_for_upper_bound)."""
    pmf = [math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(n + 1)]
    below = [math.fsum(pmf[: j + 1]) for j in range(n + 1)]
    low, high = order_statistic_ranks(n, q, 0.025)
    assert low == max(j + 1 for j in range(-1, n) if (below[j] if j >= 0 else 0) <= 0.025 + 1e-12)
    assert high == next((u for u in range(1, n + 1) if 1 - below[u - 1] <= 0.025 + 1e-12), n + 1)
    needed = requests_for_upper_bound(100 * q)
    assert (high == n + 1) == (needed is not None and n < needed)
