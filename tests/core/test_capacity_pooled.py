"""A p99 near the limit proved by the bracket's requests together, and levels far above
the limit stopped early: what keeps the interval-judged capacity search fast.

Pure logic (no server): tui.bench.capacity.judge's pooled bound and early miss, and
tui.bench.capacity.pooled over closed-loop outcomes made here. The search against the
simulator's truth is in tests/integration/test_bench_capacity.py.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from statistics import NormalDist

from tui.bench.capacity.judge import clearly_missed, judge_p99
from tui.bench.capacity.measure import ClosedLoop
from tui.bench.capacity.pooled import pooled_levels
from tui.bench.capacity.search import CapacityLevel, CapacitySlo
from tui.bench.capacity.spec import CapacitySpec
from tui.bench.model import RequestOutcome
from tui.bench.uncertainty import MET, MISSED, UNDECIDED, PercentileRanks
from tui.bench.workload import BenchSpec

SLO = CapacitySlo(ttft_p99_ms=2000, itl_p99_ms=None, min_user_tok_s=20)


def test_busier_levels_values_prove_a_p99_the_level_alone_cannot() -> None:
    own = [100.0 + i for i in range(60)]
    alone = judge_p99("ttft", own, 2000, requests=60, ranks=PercentileRanks())
    assert alone.verdict == UNDECIDED and alone.needed_requests == 368
    busier = [150.0 + i % 50 for i in range(200)]
    short = judge_p99("ttft", own, 2000, requests=60, ranks=PercentileRanks(), busier=busier)
    # 260 values of 368: the level needs 108 more of its own, not 308
    assert short.verdict == UNDECIDED and short.needed_requests == 168
    busier = [150.0 + i % 50 for i in range(320)]
    pooled = judge_p99("ttft", own, 2000, requests=60, ranks=PercentileRanks(), busier=busier)
    assert pooled.verdict == MET and pooled.values == 380 and pooled.high is not None


def test_a_miss_is_judged_on_the_levels_own_values_and_a_spoiling_pool_asks_for_its_own() -> None:
    own = [100.0 + i for i in range(60)]
    busier = [3000.0 + i for i in range(320)]  # a busier level far over the limit
    judged = judge_p99("ttft", own, 2000, requests=60, ranks=PercentileRanks(), busier=busier)
    assert judged.verdict == UNDECIDED  # never MISSED on values from other levels
    assert judged.needed_requests == 368  # its own 368 can still prove it
    # with its own 368 the pool is not consulted: one test per level, by its count
    many = [100.0 + i % 60 for i in range(400)]
    assert (
        judge_p99("ttft", many, 2000, requests=400, ranks=PercentileRanks(), busier=busier).verdict
        == MET
    )


def test_the_pooled_bound_covers_a_levels_p99_when_busier_levels_run_slower() -> None:
    """Generated: 400 trials of a level's 60 lognormal TTFTs with 320 from busier levels
    (the same shape, 1.0-1.5x slower): the pooled 95 % upper bound lies below the level's
    true p99 in at most the interval's 2.5 % tail (binomial allowance: <= 4.5 %)."""
    rng = random.Random(43)
    true_p99 = math.exp(5.0 + 0.6 * NormalDist().inv_cdf(0.99))
    ranks = PercentileRanks()
    below = 0
    trials = 400
    for _ in range(trials):
        own = [rng.lognormvariate(5.0, 0.6) for _ in range(60)]
        slower = [1.0 + rng.random() / 2 for _ in range(4)]
        busier = [rng.lognormvariate(5.0, 0.6) * slower[i % 4] for i in range(320)]
        judged = judge_p99("ttft", own, 1e9, requests=60, ranks=ranks, busier=busier)
        assert judged.high is not None
        below += judged.high < true_p99
    assert below / trials <= 0.045, below


def test_a_level_stops_early_only_when_its_miss_is_clear_of_the_limit() -> None:
    def requests(tpot_s: float, count: int) -> list[RequestOutcome]:
        return [
            RequestOutcome(success=True, ttft_s=0.1, latency_s=0.1 + 31 * tpot_s * (1 + i % 3 / 100),
                           output_tokens=32, usage_seen=True)
            for i in range(count)
        ]  # fmt: skip

    slo = CapacitySlo(ttft_p99_ms=None, itl_p99_ms=None, min_user_tok_s=20)
    assert not clearly_missed(requests(1 / 19.5, 28), slo, 1.0, 1)  # missed, but near: runs whole
    assert clearly_missed(requests(1 / 15.0, 28), slo, 1.0, 1)  # far above the limit


def _outcomes(ttft_s: float, count: int) -> list[RequestOutcome]:
    return [
        RequestOutcome(success=True, ttft_s=ttft_s, latency_s=ttft_s + 1.0, itl_s=[0.03] * 31,
                       output_tokens=32, usage_seen=True)
        for _ in range(count)
    ]  # fmt: skip


def _level(users: int, measured: int, failures: tuple[str, ...] = ()) -> CapacityLevel:
    return CapacityLevel(
        concurrency=users, completed=measured, failed=0, measured=measured, duration_s=10.0,
        ttft_p99_ms=100.0, itl_p99_ms=30.0, per_user_tok_s=32.0, output_throughput=32.0 * users,
        goodput=1.0, failures=failures, undecided=("ttft",), undecided_needs=(368,),
    )  # fmt: skip


def test_each_level_is_judged_again_with_the_busier_levels_that_ran_whole() -> None:
    spec = CapacitySpec(BenchSpec(base_url="http://127.0.0.1:1"), slo=SLO)
    loops = {c: ClosedLoop(measured=_outcomes(0.1, n)) for c, n in ((12, 36), (16, 48), (20, 60))}
    loops[24] = ClosedLoop(measured=_outcomes(0.2, 72))
    levels = [
        _level(12, 36), _level(16, 48), _level(20, 60),
        _level(24, 72, failures=("queue",)),  # over-saturated: stopped early, not pooled
    ]  # fmt: skip
    found = {lv.concurrency: lv for lv in pooled_levels(levels, loops, spec, 1.0)}
    assert found[20].undecided_needs == (368,)  # nothing busier ran whole
    assert found[16].undecided_needs == (368 - 60,)
    assert found[12].undecided_needs == (368 - 60 - 48,)
    loops[20] = ClosedLoop(measured=_outcomes(0.1, 330))
    levels[2] = replace(levels[2], measured=330)
    found = {lv.concurrency: lv for lv in pooled_levels(levels, loops, spec, 1.0)}
    assert found[16].undecided == () and found[12].undecided == ()  # 378 / 414 values: met
    assert found[20].undecided == ("ttft",)
    assert MISSED not in [lv.verdict for lv in found.values() if lv.concurrency < 24]
    assert found[16].verdict == MET
