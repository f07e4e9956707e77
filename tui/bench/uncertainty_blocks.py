"""Intervals over requests that are not independent: a moving-block bootstrap in send order.

Why: the requests of one run share the server's state. At one stream every request's
TPOT is the mean of the same engine's decode steps, whose length drifts (the
simulator's step is a timer whose overshoot follows the machine; a GPU's follows its
clocks and the scheduler's CPU time), so neighbouring requests' TPOTs move together
(lag-1 autocorrelation +0.23 on a quiet box, tests/perf/results/
bench_interval_coverage.txt) and a bootstrap over independent requests is too narrow
(45-52 % coverage of the mean). A moving-block bootstrap resamples runs of b
consecutive requests, so it keeps that dependence; its variance of the mean is, in the
limit, the Bartlett long-run variance with bandwidth b, used here directly (as
tui.bench.uncertainty does for the independent case), with Student's t on the
kernel's equivalent degrees of freedom (1.5 n / b).

The block length b is Andrews' AR(1) plug-in for the Bartlett kernel from the series'
lag-1 autocorrelation, at least n^(1/3) (Kunsch's rate), at most n / 2. The interval is
never narrower than the independent one: a negative autocorrelation (TTFT and E2EL
alternate slightly, -0.07) is noise at a few dozen requests, and narrowing on it would
trade coverage for nothing. Percentiles use the same dependence as fewer effective
requests (n times the independent over the long-run variance): their order-statistic
interval over that many, each end moved outward onto n's ranks.

What no interval from one run can see is a drift constant over the run (the machine's
speed between runs): `bench --repeat N` measures that spread (tui.bench.repeats).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

CONFIDENCE = 0.95

# Student's t at 0.975 for 1..30 degrees of freedom; above, z with its 1/df correction.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile: the table at 0.975, else z with its first-order correction."""
    if p == 0.975 and df <= len(_T975):
        return _T975[df - 1]
    z = NormalDist().inv_cdf(p)
    return z + (z**3 + z) / (4 * df)


def autocovariance(values: Sequence[float], lag: int, mean: float) -> float:
    """The lag-`lag` autocovariance (divided by n, so the Bartlett sum stays >= 0)."""
    n = len(values)
    return math.fsum((values[i] - mean) * (values[i + lag] - mean) for i in range(n - lag)) / n


def block_length(values: Sequence[float]) -> int:
    """Andrews' AR(1) plug-in bandwidth for the Bartlett kernel, within [n^(1/3), n / 2]."""
    n = len(values)
    if n < 4:
        return 1
    mean = math.fsum(values) / n
    variance = autocovariance(values, 0, mean)
    rho = autocovariance(values, 1, mean) / variance if variance > 0 else 0.0
    rho = min(max(rho, 0.0), 0.97)
    alpha = 4 * rho * rho / ((1 - rho) ** 2 * (1 + rho) ** 2)
    andrews = math.ceil(1.1447 * (alpha * n) ** (1 / 3))
    return max(1, min(n // 2, max(math.ceil(n ** (1 / 3)), andrews)))


def long_run_variance(values: Sequence[float], block: int) -> float:
    """The moving-block bootstrap's variance of sqrt(n) times the mean (Bartlett kernel)."""
    n = len(values)
    mean = math.fsum(values) / n
    found = autocovariance(values, 0, mean)
    for lag in range(1, min(block, n)):
        found += 2 * (1 - lag / block) * autocovariance(values, lag, mean)
    return max(found, 0.0)


def serial_mean_interval(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The interval of the mean of `values` in send order: the block bootstrap's normal
    limit, never narrower than the independent (t) interval."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, mean
    independent = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    p = 1 - (1 - confidence) / 2
    half = t_quantile(p, n - 1) * math.sqrt(independent / n)
    block = block_length(values)
    if block > 1:
        df = max(1, min(n - 1, math.floor(1.5 * n / block)))
        half = max(half, t_quantile(p, df) * math.sqrt(long_run_variance(values, block) / n))
    return mean - half, mean + half


def effective_requests(values: Sequence[float]) -> int:
    """How many independent requests `values` (in send order) are worth: n times the
    independent variance over the long-run one, at most n, at least 1."""
    n = len(values)
    block = block_length(values)
    if block <= 1:
        return n
    mean = math.fsum(values) / n
    independent = autocovariance(values, 0, mean)
    long_run = long_run_variance(values, block)
    if long_run <= independent or independent <= 0:
        return n
    return max(1, min(n, math.floor(n * independent / long_run)))
