"""The simulator's true capacity at an SLO: its own scheduler replayed on a virtual clock.

The truth a capacity search is checked against must come from the model, not
from another measurement. So the very scheduler the server runs
(`SimEngine._plan_step` and `_complete_step`: chunked prefill in a per-step
token budget, `max_batch`, KV cache reserved on admission) is driven here
step by step with simulated time and no network: N closed-loop users, each
sending its next request the moment the last one ends, the first round of
requests excluded as warm-up. The knee comes from the per-step compute
(`decode_step_s`, `decode_alpha`, `prefill_tok_s`), the KV cache size and the
batch limit; `true_capacity` bisects over N for the largest N that meets the SLO.
"""

from __future__ import annotations

import collections
import math
from dataclasses import asdict, dataclass

from tui.bench.metrics import percentile
from tui.sim.engine import SimEngine, SimRequest
from tui.sim.histograms import HISTOGRAM_BUCKETS, Histogram
from tui.sim.spec import ServerSettings

WARMUP_ROUNDS = 1
MEASURED_ROUNDS = 3
MAX_USERS = 4096


@dataclass(frozen=True, slots=True)
class SloTarget:
    """The SLO a capacity is stated against (None: that objective is not checked)."""

    ttft_p99_ms: float | None = 2000.0
    itl_p99_ms: float | None = 100.0
    min_user_tok_s: float | None = 20.0


@dataclass(frozen=True, slots=True)
class VirtualLevel:
    """What N closed-loop users see in steady state, in simulated time."""

    concurrency: int
    ttft_p99_ms: float
    itl_p99_ms: float
    per_user_tok_s: float
    output_tok_s: float
    simulated_s: float
    peak_waiting: int

    def failures(self, slo: SloTarget) -> list[str]:
        """The objectives this level misses, named as the finder names them."""
        missed = []
        if slo.ttft_p99_ms is not None and self.ttft_p99_ms > slo.ttft_p99_ms:
            missed.append("ttft")
        if slo.itl_p99_ms is not None and self.itl_p99_ms > slo.itl_p99_ms:
            missed.append("itl")
        if slo.min_user_tok_s is not None and self.per_user_tok_s < slo.min_user_tok_s:
            missed.append("user_tok_s")
        return missed


class _VirtualEngine(SimEngine):
    """SimEngine's scheduler without an event loop, HTTP or truth file."""

    def __init__(self, settings: ServerSettings) -> None:  # no super(): no event loop here
        self.settings = settings
        self.waiting = collections.deque()
        self.running = []
        self.histograms = {name: Histogram(b) for name, b in HISTOGRAM_BUCKETS.items()}
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.success = collections.Counter()
        self.done: list[SimRequest] = []
        self.spec = None  # the truth of capacity is without speculative decoding

    def _finish(self, request: SimRequest, reason: str, end_s: float) -> None:
        request.finished = True
        self.done.append(request)


def simulate_level(
    settings: ServerSettings, concurrency: int, prompt_tokens: int, output_tokens: int
) -> VirtualLevel:
    """Steady state of `concurrency` closed-loop users (first round excluded as warm-up)."""
    engine = _VirtualEngine(settings)
    warm = concurrency * WARMUP_ROUNDS
    total = concurrency * (WARMUP_ROUNDS + MEASURED_ROUNDS)
    submitted = 0
    now = 0.0
    itls_s: list[float] = []
    peak_waiting = 0

    def submit(at_s: float) -> None:
        nonlocal submitted
        submitted += 1
        # Warm-up request i asks for i/N of the output, as the capacity finder's does, so
        # the users spread over one request's length instead of moving in lockstep waves.
        length = output_tokens
        if submitted <= warm:
            length = max(1, math.ceil(output_tokens * submitted / concurrency))
        engine.waiting.append(SimRequest(submitted, "", prompt_tokens, length, [], at_s))

    for _ in range(concurrency):
        submit(0.0)
    while len(engine.done) < total:
        decoding, chunks, admitted = engine._plan_step()
        duration = settings.batch_step_s(len(decoding), sum(chunks.values()))
        for request in admitted:
            request.scheduled_s = now
        engine.running.extend(admitted)
        peak_waiting = max(peak_waiting, len(engine.waiting))
        now += duration
        finished_before = len(engine.done)
        engine._complete_step(decoding, chunks, now, duration)
        itls_s.extend(duration for r in decoding if r.number > warm)
        for _ in engine.done[finished_before:]:
            if submitted < total:
                submit(now)
    measured = [r for r in engine.done if r.number > warm]
    ttfts = [(r.first_token_s or 0.0) - r.arrival_s for r in measured]
    tpots = [
        ((r.last_token_s or 0.0) - (r.first_token_s or 0.0)) / (r.emitted - 1)
        for r in measured
        if r.emitted > 1
    ]
    mean_tpot = sum(tpots) / len(tpots) if tpots else 0.0
    start = min(r.arrival_s for r in measured)
    end = max(r.last_token_s or 0.0 for r in measured)
    return VirtualLevel(
        concurrency=concurrency,
        ttft_p99_ms=percentile(ttfts, 99) * 1000,
        itl_p99_ms=percentile(itls_s, 99) * 1000,
        per_user_tok_s=1.0 / mean_tpot if mean_tpot > 0 else float("inf"),
        output_tok_s=sum(r.emitted for r in measured) / (end - start) if end > start else 0.0,
        simulated_s=now,
        peak_waiting=peak_waiting,
    )


def true_capacity(
    settings: ServerSettings, slo: SloTarget, prompt_tokens: int, output_tokens: int
) -> dict[str, object]:
    """The largest number of concurrent users that meets `slo`, with that level's figures."""
    cache: dict[int, VirtualLevel] = {}

    def level(users: int) -> VirtualLevel:
        if users not in cache:
            cache[users] = simulate_level(settings, users, prompt_tokens, output_tokens)
        return cache[users]

    def meets(users: int) -> bool:
        return not level(users).failures(slo)

    body: dict[str, object] = {
        "slo": asdict(slo),
        "input_tokens": prompt_tokens,
        "output_tokens": output_tokens,
        "time_scale": settings.time_scale,
        "kv_cache_tokens": settings.kv_cache_tokens,
        "max_batch": settings.max_batch,
    }
    if not meets(1):
        return {**body, "concurrency": 0, "limited_by": level(1).failures(slo)}
    low, high = 1, 2
    while high <= MAX_USERS and meets(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if meets(middle) else (low, middle)
    best = level(low)
    above = level(high).failures(slo) if high <= MAX_USERS else []
    return {
        **body,
        "concurrency": low,
        "output_tok_s": best.output_tok_s,
        "per_user_tok_s": best.per_user_tok_s,
        "ttft_p99_ms": best.ttft_p99_ms,
        "itl_p99_ms": best.itl_p99_ms,
        "limited_by": above,
    }
