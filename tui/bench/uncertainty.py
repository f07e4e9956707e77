"""How sure a level's figures are: 95 % bootstrap intervals over its requests, seeded.

Why not resample n values B times: in pure Python that is seconds at 10k requests.
Each figure's bootstrap distribution is drawn without building the resamples:
- a percentile: the k-th smallest of a resample is the original's ceil(n U)-th
  smallest, U ~ Beta(k, n - k + 1) (the k-th of n uniforms), so B Beta draws give
  the exact bootstrap of the nearest-rank percentile;
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
import random
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

RESAMPLES = 1000
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


class RankBootstrap:
    """Seeded bootstrap of order statistics: the ranks a resample's k-th smallest falls
    on, kept per (n, k), so the metrics of a level (same n) share the draws."""

    def __init__(self, rng: random.Random, confidence: float = CONFIDENCE) -> None:
        self.rng = rng
        self.tail = (1 - confidence) / 2
        self._ranks: dict[tuple[int, int, int], tuple[int, int]] = {}

    def ranks(self, n: int, k: int, effective: int | None = None) -> tuple[int, int]:
        """0-based ranks of the interval's ends for the k-th smallest (1-based) of n; with
        `effective` < n independent requests' worth, its k-th of them, on n's ranks."""
        m = n if effective is None else max(1, min(n, effective))
        j = k if m == n else max(1, min(m, round(k * m / n)))
        found = self._ranks.get((n, j, m))
        if found is None:
            draws = sorted(self.rng.betavariate(j, m - j + 1) for _ in range(RESAMPLES))
            low, high = _tails(draws, self.tail)
            found = (_rank(low, n), _rank(high, n))
            self._ranks[(n, j, m)] = found
        return found


def _rank(u: float, n: int) -> int:
    return min(n - 1, max(0, math.ceil(u * n) - 1))


def nearest_rank(n: int, percentile: float) -> int:
    """1-based rank of the nearest-rank percentile of n values."""
    return min(n, max(1, round((n - 1) * percentile / 100) + 1))


def percentile_interval(
    ordered: Sequence[float], percentile: float, boot: RankBootstrap, effective: int | None = None
) -> tuple[float, float]:
    """The bootstrap interval of the nearest-rank percentile of sorted `ordered`, worth
    `effective` independent values (None: all of them)."""
    low, high = boot.ranks(len(ordered), nearest_rank(len(ordered), percentile), effective)
    return ordered[low], ordered[high]


def _tails(ordered: Sequence[float], tail: float) -> tuple[float, float]:
    last = len(ordered) - 1
    return ordered[round(tail * last)], ordered[round((1 - tail) * last)]


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
    boot: RankBootstrap,
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
        low, high = percentile_interval(ordered, q, boot, effective)
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
