"""Why a run's figure parts from the pooled truth (tests/perf/bench_interval_coverage.py).

Why: a one-run interval is over the run's requests, so it can only cover a truth that
differs from the run's figure by what those requests carry independently. This splits
the runs' spread of the simulator's own account (its per-request records) into:
- within: the standard error each run's requests imply (sd / sqrt(n));
- between: a random effect the requests of a run share (tau, the spread of the runs'
  means beyond `within`): the event loop's step overshoot moving with the machine's
  clock from run to run at one stream;
- the population's phase: the pooled runs minus the population measured before them;
- the first request of a run (it follows the pause between levels) minus the others;
- the most requests ever in flight together (the batch a decode step served);
and gives the coverage ceiling: what an interval of the right width over one run's
requests reaches against a pooled truth when the runs shift by tau.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist


@dataclass(frozen=True, slots=True)
class RunSpread:
    """The runs' means of one metric, split into the requests' part and the runs' own."""

    runs: int
    within_ms: float  # root mean square of the runs' own standard errors
    between_ms: float  # the standard deviation of the runs' means
    tau_ms: float  # the shared per-run shift: sqrt(between^2 - within^2), 0 when below

    @property
    def ceiling(self) -> float:
        """Coverage of a pooled truth by +-1.96 within, when each run shifts by N(0, tau)."""
        if self.within_ms <= 0:
            return 0.0 if self.tau_ms > 0 else 1.0
        z = 1.96 * self.within_ms / math.hypot(self.within_ms, self.tau_ms)
        return 2 * NormalDist().cdf(z) - 1


def run_spread(runs: Sequence[Sequence[float]]) -> RunSpread | None:
    """The spread of the runs' means (each run's values in ms); None under 2 usable runs."""
    usable = [r for r in runs if len(r) >= 2]
    if len(usable) < 2:
        return None
    means = [statistics.fmean(r) for r in usable]
    within = math.sqrt(statistics.fmean(statistics.variance(r) / len(r) for r in usable))
    between = statistics.stdev(means)
    tau = math.sqrt(max(0.0, between * between - within * within))
    return RunSpread(len(usable), within, between, tau)


def first_minus_rest(runs: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """Mean over runs of (first value - mean of the others) and its standard error."""
    gaps = [r[0] - statistics.fmean(r[1:]) for r in runs if len(r) >= 3]
    if len(gaps) < 2:
        return None
    return statistics.fmean(gaps), statistics.stdev(gaps) / math.sqrt(len(gaps))


def most_in_flight(records: Sequence[dict[str, object]]) -> int:
    """The most requests between arrival and last token at once (the decode batch's bound)."""
    edges: list[tuple[float, int]] = []
    for r in records:
        if r.get("last_token_s") is None:
            continue
        edges.append((float(r["arrival_s"]), 1))  # type: ignore[arg-type]
        edges.append((float(r["last_token_s"]), -1))  # type: ignore[arg-type]
    found = now = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):  # an end before a start
        now += step
        found = max(found, now)
    return found
