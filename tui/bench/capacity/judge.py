"""A capacity level's SLO judged on its intervals, as a bench level's attainment is.

A p99 of a few requests is a point that the next few requests move: judged on it, a
search calls a level met or missed by chance (the demo's answer was 22 users against a
truth of 21). Each objective is judged on its 95 % interval (tui.bench.uncertainty):
met only when the interval lies within the objective, missed only when it lies
outside, else "too few requests to decide", with the requests that could decide it.
A p99 needs its upper bound closed (>= 368 values) to be shown met.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from tui.bench.uncertainty import (
    MET,
    MISSED,
    UNDECIDED,
    RankBootstrap,
    nearest_rank,
    percentile_interval,
    requests_for_upper_bound,
)

P99 = 99.0
# Requests per extension when a closed interval straddles the objective: twice as many
# narrow it by about 1/sqrt(2).
STRADDLE_GROWTH = 2


@dataclass(frozen=True, slots=True)
class ObjectiveJudgement:
    """One objective of one level: its figure's interval against the limit."""

    objective: str  # "ttft", "itl", "user_tok_s" (keys of search.FAILURE_LABELS)
    verdict: str  # MET, MISSED or UNDECIDED
    value: float
    low: float
    high: float | None  # None: open above (too few values above the p99)
    values: int  # the values the interval is over (requests, or ITL gaps)
    needed_requests: int | None = None  # when undecided: the requests that could decide it
    # (None: none could, the figure sits on its limit)

    def describe(self) -> str:
        """`p99 TTFT 1.9-? s: too few requests to decide (16 requests, need >= 368)`."""
        if self.verdict != UNDECIDED:
            return f"{self.objective} {self.verdict}"
        need = f", need >= {self.needed_requests}" if self.needed_requests else ""
        return f"{self.objective}: {UNDECIDED} ({self.values} values{need})"


def judge_p99(
    objective: str,
    values: Sequence[float],
    limit: float,
    *,
    requests: int,
    boot: RankBootstrap,
) -> ObjectiveJudgement:
    """A p99 objective (`values` and `limit` in one unit) over `requests` requests; the
    values may be more than the requests (ITL: one gap per token)."""
    if not values:
        return ObjectiveJudgement(objective, UNDECIDED, 0.0, 0.0, None, 0, None)
    ordered = sorted(values)
    n = len(ordered)
    value = ordered[nearest_rank(n, P99) - 1]
    low, high = percentile_interval(ordered, P99, boot)
    needed = requests_for_upper_bound(P99) or n
    closed: float | None = high if n >= needed else None
    if low > limit:
        return ObjectiveJudgement(objective, MISSED, value, low, closed, n)
    if closed is not None and closed <= limit:
        return ObjectiveJudgement(objective, MET, value, low, closed, n)
    per_request = max(n / max(requests, 1), 1.0)
    want = needed if closed is None else STRADDLE_GROWTH * n
    return ObjectiveJudgement(
        objective, UNDECIDED, value, low, closed, n, math.ceil(want / per_request)
    )


def judge_speed(
    value: float, interval: tuple[float, float] | None, limit: float, *, requests: int
) -> ObjectiveJudgement:
    """The per-user speed (1 / mean TPOT) against its floor, on its interval."""
    if interval is None:
        return ObjectiveJudgement("user_tok_s", UNDECIDED, value, value, None, requests, 2)
    low, high = interval
    if high < limit:
        return ObjectiveJudgement("user_tok_s", MISSED, value, low, high, requests)
    if low >= limit:
        return ObjectiveJudgement("user_tok_s", MET, value, low, high, requests)
    # the interval narrows as 1/sqrt(requests): as many as bring its half-width under
    # the distance to the limit (None: on the limit, no count decides it)
    distance, half = abs(value - limit), (high - low) / 2
    needed = math.ceil(requests * (half / distance) ** 2 * 1.1) if distance > 0 else None
    return ObjectiveJudgement("user_tok_s", UNDECIDED, value, low, high, requests, needed)


def bootstrap(seed: int) -> RankBootstrap:
    """The level's seeded bootstrap (the bench's own seeding)."""
    return RankBootstrap(random.Random(seed ^ 0xB007))
