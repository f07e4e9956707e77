"""A capacity level's SLO judged on its intervals, as a bench level's attainment is.

A p99 of a few requests is a point that the next few requests move: judged on it, a
search calls a level met or missed by chance (the demo's answer was 22 users against a
truth of 21). Each objective is judged on its 95 % interval (tui.bench.uncertainty):
met only when the interval lies within the objective, missed only when it lies
outside, else "too few requests to decide", with the requests that could decide it.
A p99 needs its upper bound closed (>= 368 values) to be shown met.

Those 368 need not all come from one level: latencies rise with load (the premise of
the search's bisection and of `search.inferred`), so the values of busier levels lie
at or above this level's, and the upper bound of this level's values pooled with theirs
bounds this level's p99 from above. The busier levels' requests count towards the
proof (`busier`); a miss is judged on the level's own values alone. Proving a p99 near
the limit then costs the requests the bracket lacks, not 368 more at one level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tui.bench.capacity.search import CapacitySlo
from tui.bench.metrics import tpot_of
from tui.bench.model import RequestOutcome
from tui.bench.uncertainty import (
    MET,
    MISSED,
    UNDECIDED,
    PercentileRanks,
    mean_interval,
    nearest_rank,
    percentile_interval,
    requests_for_upper_bound,
)

P99 = 99.0
# Requests per extension when a closed interval straddles the objective: twice as many
# narrow it by about 1/sqrt(2).
STRADDLE_GROWTH = 2
# How far beyond a limit a level's interval must lie for the level to stop early.
CLEAR_MARGIN = 0.1


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
    ranks: PercentileRanks,
    busier: Sequence[float] = (),
) -> ObjectiveJudgement:
    """A p99 objective (`values` and `limit` in one unit) over `requests` requests; the
    values may be more than the requests (ITL: one gap per token). `busier`: the same
    figure's values at busier levels, pooled in for the upper bound only. The requests
    it asks for are this level's own, counting the busier values already there."""
    if not values:
        return ObjectiveJudgement(objective, UNDECIDED, 0.0, 0.0, None, 0, None)
    ordered = sorted(values)
    own = len(ordered)
    value = ordered[nearest_rank(own, P99) - 1]
    low, high = percentile_interval(ordered, P99, ranks)
    needed = requests_for_upper_bound(P99) or own
    if low > limit:
        closed_own = high if own >= needed else None
        return ObjectiveJudgement(objective, MISSED, value, low, closed_own, own)
    # Pooled only while the level's own values are too few to close the bound: one test
    # per level, chosen by its count, never by which of two bounds came out lower.
    pooled = sorted([*ordered, *busier]) if busier and own < needed else ordered
    n = len(pooled)
    closed: float | None = percentile_interval(pooled, P99, ranks)[1] if n >= needed else None
    if closed is not None and closed <= limit:
        return ObjectiveJudgement(objective, MET, value, low, closed, n)
    if own >= needed:
        want = STRADDLE_GROWTH * own
    elif closed is None:
        want = needed - (n - own)  # the busier values count towards the bound
    else:
        want = needed  # the busier values' bound lies above the limit: the level's own
    per_request = max(own / max(requests, 1), 1.0)
    return ObjectiveJudgement(
        objective, UNDECIDED, value, low, closed, n, math.ceil(max(want, own + 1) / per_request)
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


@dataclass(frozen=True, slots=True)
class Busier:
    """TTFT and ITL values (ms, server time) of the levels busier than one being judged:
    pooled into its p99 proofs (tui.bench.capacity.judge)."""

    ttft_ms: tuple[float, ...] = ()
    itl_ms: tuple[float, ...] = ()


def judge_level(
    good: Sequence[RequestOutcome], slo: CapacitySlo, scale: float, seed: int, busier: Busier
) -> list[ObjectiveJudgement]:
    """Each objective judged over a level's successful measured requests `good` (times in
    wall seconds, x `scale`)."""
    if not good:
        return []
    ttfts = [o.ttft_s * scale * 1000 for o in good]
    itls = [gap * scale * 1000 for o in good for gap in o.itl_s]
    tpots = [t * scale for o in good if (t := tpot_of(o)) is not None]
    mean_tpot = sum(tpots) / len(tpots) if tpots else 0.0
    tpot_low, tpot_high = mean_interval(tpots) if len(tpots) >= 2 else (0.0, 0.0)
    per_user_interval = (1.0 / tpot_high, 1.0 / tpot_low) if tpot_low > 0 else None
    ranks = PercentileRanks()
    return [
        judge_p99("ttft", ttfts, limit, requests=len(good), ranks=ranks, busier=busier.ttft_ms)
        for limit in (slo.ttft_p99_ms,) if limit is not None
    ] + [
        judge_p99("itl", itls, limit, requests=len(good), ranks=ranks, busier=busier.itl_ms)
        for limit in (slo.itl_p99_ms,) if limit is not None
    ] + [
        judge_speed(1.0 / mean_tpot if mean_tpot > 0 else 0.0, per_user_interval, limit,
                    requests=len(tpots))
        for limit in (slo.min_user_tok_s,) if limit is not None
    ]  # fmt: skip


def open_objectives(
    good: Sequence[RequestOutcome], slo: CapacitySlo, scale: float, seed: int, busier: Busier
) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """The objectives a level's intervals leave undecided, and the requests each needs."""
    open_ = [j for j in judge_level(good, slo, scale, seed, busier) if j.verdict == UNDECIDED]
    return tuple(j.objective for j in open_), tuple(j.needed_requests for j in open_)


def clearly_missed(
    good: Sequence[RequestOutcome], slo: CapacitySlo, scale: float, seed: int
) -> bool:
    """An objective missed on its interval by more than the search's tolerance: the level
    is far above the limit and its remaining requests would not change that. The margin
    matters: one round's requests overlap in time and share the server's state, so their
    interval is narrower than the level's; a level near the limit runs whole."""

    def beyond(limit: float | None, factor: float) -> float | None:
        return None if limit is None else limit * factor

    far = CapacitySlo(
        beyond(slo.ttft_p99_ms, 1 + CLEAR_MARGIN),
        beyond(slo.itl_p99_ms, 1 + CLEAR_MARGIN),
        beyond(slo.min_user_tok_s, 1 - CLEAR_MARGIN),
    )
    return any(j.verdict == MISSED for j in judge_level(good, far, scale, seed, Busier()))
