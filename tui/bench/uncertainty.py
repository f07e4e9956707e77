"""How sure a level's figures are: 95 % intervals over its requests, none drawn at random.

Why not resample n values B times: in pure Python that is seconds at 10k requests.
- a percentile: the order-statistic interval, the values at the ranks where the count
  of requests below the true percentile, Bin(n, q), leaves <= 2.5 % on each side; exact
  for any distribution, ties included. Its bootstrap (Beta draws of the resample's
  rank) fell a rank short at few requests: the median of 24 came out x(8)..x(17) or
  x(9)..x(18) by the draws, 89-96 % coverage, where the binomial's x(7)..x(18) is 97.7 %
  (tests/core/test_bench_percentile_coverage.py);
- the mean: the resampled mean's distribution is its normal limit (sd / sqrt(n)),
  used directly, with Student's t in place of z for few requests (the percentile
  bootstrap of a mean is too narrow there; resampling outright cost 25 ms a
  figure at 100 requests);
- SLO attainment, a share: the Wilson interval, because a bootstrap of a share that
  every request met has no width at all, however few the requests.
A share whose interval straddles the target is "too few requests to decide".

A high percentile of few requests has no upper bound: when even the largest value
falls below the true p99 more often than the interval's upper tail allows (0.99^n >
2.5 %, so under 368 requests), no resample can reach above it and a closed interval
would be falsely tight (0-18 % coverage at 24 requests, tests/perf/results/
bench_interval_coverage.txt). Such an interval is open above: "p99 >= X, upper bound
unknown: N requests, need >= M".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from tui.bench.uncertainty_blocks import (
    CONFIDENCE,
    effective_requests,
    serial_mean_interval,
    t_quantile,
)

RESAMPLES = 1000  # kept in stored levels (LevelUncertainty.resamples); none is drawn now
MET, MISSED, UNDECIDED = "met", "missed", "too few requests to decide"


@dataclass(frozen=True, slots=True)
class Interval:
    figure: str  # "mean", "p50", "p99.9"
    value: float
    low: float
    high: float | None  # None: open above, too few requests above the percentile
    requests: int = 0  # the values it is over (0 in runs stored before it was kept)
    needed: int | None = None  # when open: the requests an upper bound needs (None: none do)

    def covers(self, truth: float) -> bool:
        return self.low <= truth and (self.high is None or truth <= self.high)

    def unknown_above(self) -> str:
        """Why the upper bound is unknown ("" when it is known)."""
        if self.high is not None:
            return ""
        need = "the maximum has none" if self.needed is None else f"need >= {self.needed}"
        return f"upper bound unknown: {self.requests} requests, {need}"


@dataclass(frozen=True, slots=True)
class MetricIntervals:
    name: str  # "ttft_ms", "tpot_ms", "e2el_ms", "user_tok_s"
    intervals: tuple[Interval, ...]

    def get(self, figure: str) -> Interval | None:
        return next((i for i in self.intervals if i.figure == figure), None)


@dataclass(frozen=True, slots=True)
class SloAttainment:
    """Share of requests within every objective, its interval and what it says."""

    met: int
    total: int
    low: float
    high: float
    target: float
    verdict: str  # MET, MISSED or UNDECIDED
    needed: int | None = None  # the fewest requests that could show MET (None: none can)

    def describe(self) -> str:
        """The verdict, with the requests it lacks when too few could ever decide it."""
        if self.verdict != UNDECIDED or self.needed is None or self.total >= self.needed:
            return self.verdict
        return f"{self.verdict} ({self.total} requests, need >= {self.needed})"

    @property
    def share(self) -> float:
        return self.met / self.total if self.total else 0.0


@dataclass(frozen=True, slots=True)
class LevelUncertainty:
    confidence: float
    resamples: int
    seed: int
    metrics: tuple[MetricIntervals, ...]
    slo: SloAttainment | None = None

    def metric(self, name: str) -> MetricIntervals | None:
        return next((m for m in self.metrics if m.name == name), None)


def figure_name(percentile: float) -> str:
    return f"p{int(percentile)}" if int(percentile) == percentile else f"p{percentile:g}"


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The interval of the mean: its bootstrap's normal limit (t for few requests)."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, mean
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


class PercentileRanks:
    """The ranks of a percentile's distribution-free interval, kept per (n, q, effective)
    so the metrics of a level (same n) share them."""

    def __init__(self, confidence: float = CONFIDENCE) -> None:
        self.tail = (1 - confidence) / 2
        self._ranks: dict[tuple[int, float, int], tuple[int, int]] = {}

    def ranks(self, n: int, q: float, effective: int | None = None) -> tuple[int, int]:
        """0-based ranks of the interval's ends for the q-quantile (0..1) of n sorted
        values; with `effective` < n independent requests' worth, the interval of that
        many, each end moved outward onto n's ranks. An end with no rank that bounds the
        quantile (too few values below or above it) is the extreme value."""
        m = n if effective is None else max(1, min(n, effective))
        found = self._ranks.get((n, q, m))
        if found is None:
            low, high = order_statistic_ranks(m, q, self.tail)
            if m < n:  # the count of values below each end, scaled outward to n's
                low = 1 + (low - 1) * n // m if low >= 1 else 0
                high = n - (m - high) * n // m if high <= m else n + 1
            found = (max(low, 1) - 1, min(high, n) - 1)
            self._ranks[(n, q, m)] = found
        return found


def order_statistic_ranks(n: int, q: float, tail: float) -> tuple[int, int]:
    """1-based ranks (low, high) of the equal-tailed order-statistic interval of the
    q-quantile of n independent values: the largest low with P(Bin(n, q) < low) <= tail
    and the smallest high with P(Bin(n, q) >= high) <= tail, whatever the distribution
    (ties included: the ends are the values at those ranks, inclusive). 0: no value
    bounds it below; n + 1: none bounds it above (q^n > tail, requests_for_upper_bound)."""
    if q <= 0:
        return 0, 1
    if q >= 1:
        return n, n + 1
    first, below = _binomial_cdf(n, q)  # below[i] = P(Bin(n, q) <= first + i)
    low = max((first + i + 1 for i, p in enumerate(below) if p <= tail), default=first)
    high = next((first + i + 1 for i, p in enumerate(below) if 1 - p <= tail), n + 1)
    return low, min(high, n + 1)


def _binomial_cdf(n: int, q: float) -> tuple[int, list[float]]:
    """(first, cdf): P(Bin(n, q) <= first + i) for the j around the mode whose terms are
    over 1e-18 (about 9 standard deviations: 10^6 values stay quick); below `first` it
    is 0 to that precision, past the list's end 1."""
    mode = min(n, math.floor((n + 1) * q))
    log_mode = (
        math.lgamma(n + 1) - math.lgamma(mode + 1) - math.lgamma(n - mode + 1)
        + mode * math.log(q) + (n - mode) * math.log1p(-q)
    )  # fmt: skip
    ratio = q / (1 - q)
    down = [math.exp(log_mode)]  # pmf(mode), pmf(mode - 1), ...
    while (j := mode - len(down) + 1) > 0 and down[-1] >= 1e-18:
        down.append(down[-1] * j / ((n - j + 1) * ratio))
    up: list[float] = []  # pmf(mode + 1), ...
    while (j := mode + len(up)) < n and (up[-1] if up else 1.0) >= 1e-18:
        up.append((up[-1] if up else down[0]) * (n - j) / (j + 1) * ratio)
    found: list[float] = []
    total = 0.0
    for p in [*reversed(down), *up]:
        total += p
        found.append(total)
    return mode - len(down) + 1, found


def nearest_rank(n: int, percentile: float) -> int:
    """1-based rank of the nearest-rank percentile of n values."""
    return min(n, max(1, round((n - 1) * percentile / 100) + 1))


def percentile_interval(
    ordered: Sequence[float],
    percentile: float,
    ranks: PercentileRanks,
    effective: int | None = None,
) -> tuple[float, float]:
    """The order-statistic interval of the `percentile` of sorted `ordered`, worth
    `effective` independent values (None: all of them)."""
    low, high = ranks.ranks(len(ordered), percentile / 100, effective)
    return ordered[low], ordered[high]


def wilson(met: int, total: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of a share met/total (0..1)."""
    if total <= 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    share = met / total
    middle = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    half /= 1 + z * z / total
    return max(0.0, middle - half), min(1.0, middle + half)


def slo_attainment(met: int, total: int, target: float) -> SloAttainment:
    low, high = wilson(met, total)
    verdict = MET if low >= target else MISSED if high < target else UNDECIDED
    return SloAttainment(met, total, low, high, target, verdict, requests_to_meet(target))


def requests_to_meet(target: float, confidence: float = CONFIDENCE) -> int | None:
    """The fewest requests whose Wilson interval, every one met, clears `target`: below
    it a p99 objective (target 0.99) is never shown met. None for a target of 1."""
    if target >= 1:
        return None
    if target <= 0:
        return 1
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    n = max(1, math.floor(target * z * z / (1 - target)))  # n / (n + z^2) >= target
    while wilson(n, n, confidence)[0] < target:
        n += 1
    return n


def requests_for_upper_bound(percentile: float, confidence: float = CONFIDENCE) -> int | None:
    """The fewest requests whose largest value bounds the percentile from above at the
    interval's upper tail: q^n <= tail, without assuming a distribution. None for p100."""
    q = percentile / 100
    if q >= 1:
        return None
    if q <= 0:
        return 1
    tail = (1 - confidence) / 2
    n = max(1, math.ceil(math.log(tail) / math.log(q)))
    while q**n > tail:  # the logarithms' rounding
        n += 1
    while n > 1 and q ** (n - 1) <= tail:
        n -= 1
    return n


def metric_intervals(
    name: str,
    values: Sequence[float],
    percentiles: Sequence[float],
    ranks: PercentileRanks,
    scale: float = 1.0,
) -> MetricIntervals | None:
    """Mean, median and each asked percentile of `values` (in send order: neighbours may
    share the server's state, tui.bench.uncertainty_blocks) with intervals, times `scale`."""
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)
    effective = effective_requests(values)
    low, high = serial_mean_interval(values)
    found = [Interval("mean", math.fsum(ordered) / n * scale, low * scale, high * scale, n)]
    for q in (50.0, *(p for p in percentiles if p != 50)):
        low, high = percentile_interval(ordered, q, ranks, effective)
        value = ordered[nearest_rank(n, q) - 1]
        needed = requests_for_upper_bound(q)
        if needed is None or n < needed:
            found.append(Interval(figure_name(q), value * scale, low * scale, None, n, needed))
        else:
            found.append(Interval(figure_name(q), value * scale, low * scale, high * scale, n))
    return MetricIntervals(name, tuple(found))


def uncertainty_from_dict(data: dict[str, Any] | None) -> LevelUncertainty | None:
    """Rebuild from `asdict` output (history lines, runner events); None when absent."""
    if not data:
        return None
    metrics = tuple(
        MetricIntervals(m["name"], tuple(Interval(**i) for i in m["intervals"]))
        for m in data.get("metrics") or ()
    )
    slo = data.get("slo")
    return LevelUncertainty(
        float(data["confidence"]),
        int(data["resamples"]),
        int(data["seed"]),
        metrics,
        SloAttainment(**slo) if slo else None,
    )
