"""Metric definitions of `vllm bench serve` (docs/DESIGN.md section 5), without numpy.

TTFT = first chunk with non-empty `choices` minus send time; E2EL = last such
chunk minus send time; TPOT = (E2EL - TTFT) / (output_tokens - 1) for
requests with more than one output token; ITL = every chunk-to-chunk gap,
pooled over requests. Percentiles interpolate linearly (numpy's default),
std is the population std (numpy's default ddof=0), as vLLM computes them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tui.bench.client_load import ClientLoad, ClientSample, client_load, send_lags_s
from tui.bench.model import (
    OUTPUT_TOKENS_FROM_CHUNKS,
    OUTPUT_TOKENS_FROM_USAGE,
    OUTPUT_TOKENS_MIXED,
    HttpPhases,
    LatencyStats,
    LevelResult,
    RequestOutcome,
    ServerView,
    Spread,
)
from tui.bench.over_time import time_slices
from tui.bench.uncertainty import (
    CONFIDENCE,
    RESAMPLES,
    LevelUncertainty,
    PercentileRanks,
    metric_intervals,
    slo_attainment,
)
from tui.core.config import DEFAULT_PERCENTILES


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks."""
    if not values:
        return 0.0
    return _percentile_of_sorted(sorted(values), q)


def _percentile_of_sorted(ordered: Sequence[float], q: float) -> float:
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    fraction = rank - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


def spread(values: Sequence[float], percentiles: Sequence[float]) -> Spread | None:
    """Mean, median, population std and the asked percentiles, in the values' own unit."""
    if not values:
        return None
    stats = latency_stats(values, percentiles)  # in ms: back to the unit
    return Spread(
        count=stats.count,
        mean=stats.mean_ms / 1000,
        median=stats.median_ms / 1000,
        std=stats.std_ms / 1000,
        percentiles=tuple((p, v / 1000) for p, v in stats.percentiles_ms),
    )


def http_phases(good: Sequence[RequestOutcome], percentiles: Sequence[float]) -> HttpPhases | None:
    """The level's connect, send and wait times; None when the transport gave no marks."""
    timed = [o for o in good if o.wait_s is not None]
    if not timed:
        return None
    return HttpPhases(
        connect=latency_stats([o.connect_s for o in timed if o.connect_s is not None], percentiles),
        send=latency_stats([o.send_s for o in timed if o.send_s is not None], percentiles),
        wait=latency_stats([o.wait_s for o in timed if o.wait_s is not None], percentiles),
        new_connections=sum(bool(o.connect_s) for o in timed),
    )


def latency_stats(
    values_s: Sequence[float], percentiles: Sequence[float] = DEFAULT_PERCENTILES
) -> LatencyStats:
    """Mean, median, population std, p90, p99 and the asked percentiles of seconds, in ms."""
    if not values_s:
        return LatencyStats()
    ordered = sorted(values_s)  # once: a level's pooled ITLs are a million values
    mean = sum(ordered) / len(ordered)
    variance = sum((value - mean) ** 2 for value in ordered) / len(ordered)

    def at(q: float) -> float:
        return _percentile_of_sorted(ordered, q) * 1000

    return LatencyStats(
        count=len(ordered),
        mean_ms=mean * 1000,
        median_ms=at(50),
        std_ms=math.sqrt(variance) * 1000,
        p90_ms=at(90),
        p99_ms=at(99),
        percentiles_ms=tuple((float(q), at(q)) for q in percentiles),
    )


@dataclass(frozen=True, slots=True)
class Slos:
    """Optional service-level objectives for goodput, in milliseconds (vLLM's --goodput)."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None
    attainment: float = 0.99  # the share of requests that must meet them

    @property
    def any(self) -> bool:
        return any(value is not None for value in (self.ttft_ms, self.tpot_ms, self.e2el_ms))


def output_tokens_of(outcome: RequestOutcome) -> int:
    """Output tokens from usage; one token per chunk when the server sent no usage."""
    return outcome.output_tokens if outcome.usage_seen else outcome.chunks


def tpot_of(outcome: RequestOutcome) -> float | None:
    tokens = output_tokens_of(outcome)
    if tokens <= 1:
        return None
    return (outcome.latency_s - outcome.ttft_s) / (tokens - 1)


def _meets(outcome: RequestOutcome, slos: Slos) -> bool:
    if slos.ttft_ms is not None and outcome.ttft_s * 1000 > slos.ttft_ms:
        return False
    tpot = tpot_of(outcome)
    if slos.tpot_ms is not None and tpot is not None and tpot * 1000 > slos.tpot_ms:
        return False
    return not (slos.e2el_ms is not None and outcome.latency_s * 1000 > slos.e2el_ms)


def summarize_level(
    outcomes: Sequence[RequestOutcome],
    *,
    concurrency: int,
    request_rate: float | None,
    burstiness: float,
    num_requests: int,
    duration_s: float,
    partial: bool = False,
    cancelled: int = 0,
    slos: Slos | None = None,
    server: ServerView | None = None,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    seed: int = 0,
    client_samples: Sequence[ClientSample] = (),
) -> LevelResult:
    """Aggregate one level's outcomes; failures are counted, never in latency lists.
    `seed` is kept with the intervals (none of them draws at random); `client_samples` (each process's loop lag
    and CPU) with the requests' send lags say whether the client kept up."""
    # In send order: the intervals' block bootstrap needs neighbours next to each other.
    good = sorted((o for o in outcomes if o.success), key=lambda o: o.start_s)
    failed = [outcome for outcome in outcomes if not outcome.success]
    ttfts = [outcome.ttft_s for outcome in good]
    e2els = [outcome.latency_s for outcome in good]
    tpots = [tpot for outcome in good if (tpot := tpot_of(outcome)) is not None]
    itls = [gap for outcome in good for gap in outcome.itl_s]
    total_output = sum(output_tokens_of(outcome) for outcome in good)
    total_input = sum(outcome.prompt_tokens for outcome in good)
    with_usage = sum(outcome.usage_seen for outcome in good)
    if with_usage == len(good):
        source = OUTPUT_TOKENS_FROM_USAGE
    elif with_usage == 0:
        source = OUTPUT_TOKENS_FROM_CHUNKS
    else:
        source = OUTPUT_TOKENS_MIXED
    duration = duration_s if duration_s > 0 else float("nan")
    goodput = None
    if slos is not None and slos.any:
        goodput = sum(_meets(outcome, slos) for outcome in good) / duration
    tpot_stats = latency_stats(tpots, percentiles)
    user_tok_s = [output_tokens_of(o) / o.latency_s for o in good if o.latency_s > 0]
    ttsts = [o.ttft_s + o.itl_s[0] for o in good if o.itl_s]
    prefill_rates = [o.prompt_tokens / o.ttft_s for o in good if o.ttft_s > 0 and o.prompt_tokens]
    return LevelResult(
        concurrency=concurrency,
        request_rate=request_rate,
        burstiness=burstiness,
        num_requests=num_requests,
        completed=len(good),
        failed=len(failed),
        cancelled=cancelled,
        partial=partial,
        duration_s=duration_s,
        total_input_tokens=total_input,
        total_output_tokens=total_output,
        output_tokens_source=source,
        request_throughput=_finite(len(good) / duration),
        output_throughput=_finite(total_output / duration),
        total_token_throughput=_finite((total_input + total_output) / duration),
        request_goodput=None if goodput is None else _finite(goodput),
        decode_tok_s_per_stream=1000 / tpot_stats.mean_ms if tpot_stats.mean_ms > 0 else None,
        prefill_tok_s_per_request=sum(prefill_rates) / len(prefill_rates)
        if prefill_rates
        else None,
        ttft=latency_stats(ttfts, percentiles),
        tpot=tpot_stats,
        itl=latency_stats(itls, percentiles),
        e2el=latency_stats(e2els, percentiles),
        errors=tuple(outcome.error for outcome in failed),
        server=server,
        input_tok_s=_finite(total_input / duration) if total_input else None,
        uncertainty=_uncertainty(
            good, failed, ttfts, tpots, e2els, user_tok_s, slos, percentiles, seed
        ),
        client_load=_client_load(outcomes, client_samples),
        ttst=latency_stats(ttsts, percentiles) if ttsts else None,
        user_tok_s=spread(user_tok_s, percentiles),
        http=http_phases(good, percentiles),
        over_time=time_slices(outcomes),
    )


def _client_load(
    outcomes: Sequence[RequestOutcome], samples: Sequence[ClientSample]
) -> ClientLoad | None:
    lags = send_lags_s(outcomes)
    return client_load(lags, samples) if lags or samples else None


def _uncertainty(
    good: Sequence[RequestOutcome],
    failed: Sequence[RequestOutcome],
    ttfts: Sequence[float],
    tpots: Sequence[float],
    e2els: Sequence[float],
    user_tok_s: Sequence[float],
    slos: Slos | None,
    percentiles: Sequence[float],
    seed: int,
) -> LevelUncertainty | None:
    """Intervals of TTFT, TPOT, E2EL (ms) and per-user output tok/s; SLO attainment."""
    if not good:
        return None
    ranks = PercentileRanks()
    found = [
        metric_intervals("ttft_ms", ttfts, percentiles, ranks, 1000.0),
        metric_intervals("tpot_ms", tpots, percentiles, ranks, 1000.0),
        metric_intervals("e2el_ms", e2els, percentiles, ranks, 1000.0),
        metric_intervals("user_tok_s", user_tok_s, percentiles, ranks),
    ]
    attainment = None
    if slos is not None and slos.any:
        met = sum(_meets(outcome, slos) for outcome in good)
        attainment = slo_attainment(met, len(good) + len(failed), slos.attainment)
    return LevelUncertainty(
        CONFIDENCE, RESAMPLES, seed, tuple(m for m in found if m is not None), attainment
    )


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0
