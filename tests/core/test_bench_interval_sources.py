"""The split that tests/perf/bench_interval_coverage.py uses to say why a run misses the
pooled truth: generated runs whose requests share a per-run shift (the simulator's step
overshoot moving with the machine between runs) against runs of independent requests."""

from __future__ import annotations

import random

import pytest

from tests.support.interval_sources import first_minus_rest, most_in_flight, run_spread
from tui.bench.uncertainty import PercentileRanks, metric_intervals

TRUTH_MS = 4.27  # the quiet box's pooled TPOT (tests/perf/results/bench_interval_coverage.txt)
REQUEST_SD_MS = 0.05  # one request's TPOT around its run's level: within se 0.0102 at 24


def _runs(rng: random.Random, tau_ms: float, runs: int = 400) -> list[list[float]]:
    """Runs of 24 TPOTs: each run's level shifted by N(0, tau), its requests around it."""
    found = []
    for _ in range(runs):
        level = TRUTH_MS + rng.gauss(0.0, tau_ms)
        found.append([level + rng.gauss(0.0, REQUEST_SD_MS) for _ in range(24)])
    return found


def _coverage(runs: list[list[float]]) -> float:
    ranks = PercentileRanks()
    covered = 0
    for values in runs:
        found = metric_intervals("tpot_ms", values, [90.0], ranks)
        assert found is not None
        mean = found.get("mean")
        assert mean is not None
        covered += mean.covers(TRUTH_MS)
    return covered / len(runs)


def test_a_shift_the_requests_of_a_run_share_caps_one_runs_coverage_at_the_ceiling() -> None:
    """The quiet box's figures (within se 0.0102 ms, runs spread 2.33x it: tau 0.0215 ms):
    servedeck's interval of one run's mean covers the pooled truth about as often as the
    ceiling says (near 60 %), and the split recovers tau from the runs alone."""
    runs = _runs(random.Random(43), tau_ms=0.0215)
    spread = run_spread(runs)
    assert spread is not None
    assert spread.tau_ms == pytest.approx(0.0215, rel=0.2)
    assert spread.within_ms == pytest.approx(REQUEST_SD_MS / 24**0.5, rel=0.1)
    assert 0.5 <= spread.ceiling <= 0.7, spread
    assert _coverage(runs) == pytest.approx(spread.ceiling, abs=0.08)


def test_runs_of_independent_requests_have_no_shared_shift_and_cover() -> None:
    runs = _runs(random.Random(7), tau_ms=0.0)
    spread = run_spread(runs)
    assert spread is not None
    assert spread.tau_ms <= 0.3 * spread.within_ms
    assert spread.ceiling >= 0.93
    assert _coverage(runs) >= 0.92


def test_the_first_request_of_each_run_is_compared_with_the_rest() -> None:
    runs = [[5.0, 4.0, 4.0, 4.0], [5.2, 4.1, 4.1, 4.1], [4.9, 4.0, 4.0, 4.0]]
    gap = first_minus_rest(runs)
    assert gap is not None
    assert gap[0] == pytest.approx(1.0, abs=1e-9)
    assert first_minus_rest([[1.0, 2.0, 3.0]]) is None  # one run: no spread to give


def test_requests_one_after_another_are_never_two_in_flight() -> None:
    one_stream = [{"arrival_s": float(i), "last_token_s": i + 0.9} for i in range(5)]
    assert most_in_flight(one_stream) == 1
    back_to_back = [
        {"arrival_s": 0.0, "last_token_s": 1.0},
        {"arrival_s": 1.0, "last_token_s": 2.0},
    ]
    assert most_in_flight(back_to_back) == 1  # the end of one, then the start of the next
    overlapping = [*one_stream, {"arrival_s": 0.5, "last_token_s": 3.2}]
    assert most_in_flight(overlapping) == 2
    assert most_in_flight([{"arrival_s": 0.0, "last_token_s": None}]) == 0  # never answered
