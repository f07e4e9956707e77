"""One level of a capacity search measured: a closed loop of N users (or open-loop arrivals
by rate), /metrics watched while it runs, its latencies summarised against the SLO.

Each user sends `1 + rounds` requests; the first round is warm-up and excluded. On a
simulator with a fast clock (GET /_sim/clock) every time measured is multiplied by its
time scale, and the simulator's truth can be read back after the search.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import httpx

from tui.bench.capacity.judge import Busier, clearly_missed, open_objectives
from tui.bench.capacity.search import CapacityLevel, CapacitySlo, level_failures
from tui.bench.capacity.spec import CapacitySpec
from tui.bench.capacity.watch import LevelWatch
from tui.bench.capacity.workloads import (
    CLOSED_LOOP_WORKLOADS,
    replay_trace_level,
    run_chat_users,
    run_trace_users,
)
from tui.bench.chat_loop import PrefixIntent
from tui.bench.client import stream_request
from tui.bench.client_load import client_load, send_lags_s
from tui.bench.loadgen import LevelRun, run_level
from tui.bench.metrics import output_tokens_of, percentile, tpot_of
from tui.bench.model import RequestOutcome
from tui.bench.telemetry import MetricsPoller
from tui.bench.uncertainty import mean_interval
from tui.bench.workload import BenchSpec, api_url, endpoint_path, request_payload
from tui.bench.workloads import workload_prompts


async def read_time_scale(control: httpx.AsyncClient, base_url: str) -> float:
    """The simulator's clock speed; 1 for a real server (no /_sim/clock)."""
    with contextlib.suppress(httpx.HTTPError, ValueError, KeyError, TypeError):
        response = await control.get(api_url(base_url, "/_sim/clock"))
        if response.status_code == 200:
            scale = float(response.json()["time_scale"])
            return scale if scale > 0 else 1.0
    return 1.0


async def read_truth(control: httpx.AsyncClient, spec: CapacitySpec) -> dict[str, Any] | None:
    """The simulator's true capacity for this workload and SLO; None elsewhere."""
    params = {
        name: "off" if value is None else str(value) for name, value in asdict(spec.slo).items()
    }
    params.update(
        input_tokens=str(spec.bench.input_tokens), output_tokens=str(spec.bench.output_tokens)
    )
    with contextlib.suppress(httpx.HTTPError, ValueError):
        response = await control.get(
            api_url(spec.bench.base_url, "/_sim/truth/capacity"), params=params, timeout=120.0
        )
        if response.status_code == 200:
            body = response.json()
            return body if isinstance(body, dict) else None
    return None


def summarize(
    loop_run: ClosedLoop,
    *,
    concurrency: int,
    slo: CapacitySlo,
    scale: float,
    partial: bool,
    server: Any,
    seed: int = 0,
) -> CapacityLevel:
    """One level in server time: the first round (one request per user) is warm-up; each
    objective judged on its interval (tui.bench.capacity.judge)."""
    good = [o for o in loop_run.measured if o.success]
    failed = loop_run.failed
    ttfts = [o.ttft_s * scale for o in good]
    itls = [gap * scale for o in good for gap in o.itl_s]
    tpots = [t * scale for o in good if (t := tpot_of(o)) is not None]
    mean_tpot = sum(tpots) / len(tpots) if tpots else 0.0
    fresh = [o for o in loop_run.measured[loop_run.earlier :] if o.success]
    span = max(o.end_s for o in fresh) - min(o.start_s for o in fresh) if fresh else 0.0
    window = (loop_run.earlier_window_s + span) * scale
    tokens = sum(output_tokens_of(o) for o in good)
    ttft_p99_ms = percentile(ttfts, 99) * 1000
    itl_p99_ms = percentile(itls, 99) * 1000
    per_user = 1.0 / mean_tpot if mean_tpot > 0 else 0.0
    tpot_low, tpot_high = mean_interval(tpots) if len(tpots) >= 2 else (0.0, 0.0)
    per_user_interval = (1.0 / tpot_high, 1.0 / tpot_low) if tpot_low > 0 else None
    failures = level_failures(
        slo,
        ttft_p99_ms=ttft_p99_ms,
        itl_p99_ms=itl_p99_ms,
        per_user_tok_s=per_user,
        failed=failed,
        server=server,
    )
    if not good:  # nothing measured: only over-saturation signs can be judged
        failures = tuple(f for f in failures if f in ("errors", "preemptions", "queue"))
    undecided, needs = open_objectives(good, slo, scale, seed, Busier())
    max_tpot = 1.0 / slo.min_user_tok_s if slo.min_user_tok_s else None
    meeting = sum(
        (slo.ttft_p99_ms is None or o.ttft_s * scale * 1000 <= slo.ttft_p99_ms)
        and (max_tpot is None or (tpot_of(o) or 0.0) * scale <= max_tpot)
        for o in good
    )
    return CapacityLevel(
        concurrency=concurrency,
        completed=sum(o.success for o in (*loop_run.measured, *loop_run.warmup)),
        failed=failed,
        measured=len(good),
        duration_s=window,
        ttft_p99_ms=ttft_p99_ms,
        itl_p99_ms=itl_p99_ms,
        per_user_tok_s=per_user,
        output_throughput=tokens / window if window > 0 else 0.0,
        goodput=meeting / window if window > 0 else 0.0,
        failures=failures,
        partial=partial or not (good or failures),
        per_user_tok_s_interval=per_user_interval,
        server=server,
        undecided=undecided,
        undecided_needs=needs,
    )


def level_seed(spec: CapacitySpec, concurrency: int, extension: int) -> int:
    """A fresh seed per run: a prompt repeated from an earlier one would hit the prefix cache."""
    return spec.bench.seed + 7919 * concurrency + 104_729 * extension


def first_round_tokens(output_tokens: int, concurrency: int, user: int) -> int:
    """Output length of user `user`'s warm-up request: 1/N, 2/N ... N/N of a full one.

    N users that start together would stay in lockstep (identical requests finish
    in the same step and are prefilled together again), so every later round
    would be a wave. Uneven warm-up requests spread the users evenly over one
    request's length, whatever the step time; the warm-up round is not measured.
    """
    return max(1, math.ceil(output_tokens * (user + 1) / concurrency))


def rounds_for(spec: CapacitySpec, concurrency: int) -> int:
    """Requests per user: the warm-up one, then enough for `min_requests` measured."""
    return 1 + max(spec.rounds, math.ceil(spec.min_requests / concurrency))


@dataclass(slots=True)
class ClosedLoop:
    """What the users of one level saw: measured outcomes apart from warm-up ones."""

    measured: list[RequestOutcome] = field(default_factory=list)
    warmup: list[RequestOutcome] = field(default_factory=list)
    # an extended level: the measured outcomes of its earlier runs (first in `measured`)
    # and their measured window (wall seconds), so no gap between runs counts as serving
    earlier: int = 0
    earlier_window_s: float = 0.0

    def extended(self) -> ClosedLoop:
        """A loop for the level's next run that keeps this one's outcomes."""
        fresh = [o for o in self.measured[self.earlier :] if o.success]
        window = max(o.end_s for o in fresh) - min(o.start_s for o in fresh) if fresh else 0.0
        return ClosedLoop(
            list(self.measured), list(self.warmup), len(self.measured),
            self.earlier_window_s + window,
        )  # fmt: skip

    @property
    def failed(self) -> int:
        return sum(not o.success for o in (*self.measured, *self.warmup))

    @property
    def finished(self) -> int:
        return len(self.measured) + len(self.warmup)


async def run_users(
    client: httpx.AsyncClient,
    spec: CapacitySpec,
    prompts: list[str],
    concurrency: int,
    stop: asyncio.Event,
    loop_run: ClosedLoop,
    rounds: int,
) -> None:
    """`concurrency` users, each sending its next request when the last one ends."""
    bench = spec.bench
    url = api_url(bench.base_url, endpoint_path(bench.endpoint))
    length_key = "max_completion_tokens" if bench.endpoint == "chat" else "max_tokens"

    started = time.perf_counter()

    async def user(index: int) -> None:
        due = started  # a user's next request is due when its last one ended
        for turn in range(rounds):
            if stop.is_set():
                return
            payload = request_payload(bench, prompts[(turn * concurrency + index) % len(prompts)])
            if turn == 0:
                payload[length_key] = first_round_tokens(bench.output_tokens, concurrency, index)
            outcome = RequestOutcome(prompt_tokens=bench.input_tokens, scheduled_s=due)
            await stream_request(client, url, payload, outcome, read_timeout_s=bench.read_timeout_s)
            (loop_run.warmup if turn == 0 else loop_run.measured).append(outcome)
            due = outcome.end_s

    users = [asyncio.create_task(user(index)) for index in range(concurrency)]
    stopper = asyncio.create_task(stop.wait())
    everyone = asyncio.gather(*users)
    await asyncio.wait({everyone, stopper}, return_when=asyncio.FIRST_COMPLETED)  # type: ignore[type-var]
    stopper.cancel()
    for task in users:
        task.cancel()
    await asyncio.gather(everyone, stopper, return_exceptions=True)


async def measure_level(
    client: httpx.AsyncClient,
    control: httpx.AsyncClient,
    spec: CapacitySpec,
    words: int,
    concurrency: int,
    scale: float,
    cancel: asyncio.Event,
    earlier: tuple[CapacityLevel, ClosedLoop] | None = None,
) -> tuple[CapacityLevel, ClosedLoop]:
    """Run one closed-loop level, stopping early when the server over-saturates; with
    `earlier`, run it again for the requests its verdict needs and judge them together."""
    bench = spec.bench
    extension = earlier[0].extensions + 1 if earlier else 0
    seed = level_seed(spec, concurrency, extension)
    rounds = rounds_for(spec, concurrency) if earlier is None else more_rounds(spec, *earlier)
    loop_run = ClosedLoop() if earlier is None else earlier[1].extended()
    warm = len(loop_run.warmup)
    intent = PrefixIntent()
    stop = asyncio.Event()
    poller = MetricsPoller(control, api_url(bench.base_url, "/metrics"), scale=scale)
    watch = LevelWatch(
        spec.poll_s, poller, stop, cancel, nominal=concurrency,
        steady=lambda: len(loop_run.warmup) - warm >= concurrency,
        failed=lambda: loop_run.failed > 0,
        decided=None if earlier else MissLook(loop_run, spec, concurrency, scale, seed),
    )  # fmt: skip
    if bench.workload == "chat":
        traffic = run_chat_users(
            client, bench, words, concurrency=concurrency, rounds=rounds, seed=seed,
            first_tokens=lambda user: first_round_tokens(bench.output_tokens, concurrency, user),
            stop=stop, loop_run=loop_run, intent=intent,
        )  # fmt: skip
    elif bench.workload == "trace":
        traffic = run_trace_users(
            client, bench, words, concurrency=concurrency, rounds=rounds, seed=seed,
            stop=stop, loop_run=loop_run, intent=intent,
        )  # fmt: skip
    else:
        prompts = workload_prompts(bench, words, concurrency * rounds, seed)
        traffic = run_users(client, spec, prompts, concurrency, stop, loop_run, rounds)
    sample = await watch.run(traffic)
    server = poller.stats(concurrency)
    # Stopped by the watchdog for over-saturation is a finding; stopped by a cancel is not.
    level = summarize(
        loop_run,
        concurrency=concurrency,
        slo=spec.slo,
        scale=scale,
        partial=cancel.is_set(),
        server=server if server.samples else earlier[0].server if earlier else None,
        seed=seed,
    )
    load = client_load(send_lags_s(loop_run.measured[loop_run.earlier :]), [sample])
    level = replace(
        _with_intent(level, bench, intent), client_bound=load.describe(), extensions=extension
    )
    return level, loop_run


class MissLook:
    """Looks once a round (after at least `min_requests`) whether the level's intervals
    already show a miss: a level far above the limit then stops after its first round
    rather than its third. Few looks, each on the 95 % interval, so a stop on a chance
    excursion stays rare; a met or undecided level runs whole (the search steers by it)."""

    def __init__(
        self, loop_run: ClosedLoop, spec: CapacitySpec, concurrency: int, scale: float, seed: int
    ) -> None:
        self.loop_run, self.spec, self.scale, self.seed = loop_run, spec, scale, seed
        self.every = max(concurrency, spec.min_requests)
        self.looked = 0

    def __call__(self) -> bool:
        looks = len(self.loop_run.measured) // self.every
        if looks <= self.looked:
            return False
        self.looked = looks
        good = [o for o in self.loop_run.measured if o.success]
        return clearly_missed(good, self.spec.slo, self.scale, self.seed)


def more_rounds(spec: CapacitySpec, level: CapacityLevel, loop_run: ClosedLoop) -> int:
    """Requests per user of an extending run (its warm-up one first): what the level's
    verdict needs, within `max_level_requests`, never fewer than one round."""
    target = level.needed_requests(spec.max_level_requests) or spec.max_level_requests
    extra = max(target - len(loop_run.measured), level.concurrency)
    return 1 + math.ceil(extra / level.concurrency)


def _with_intent(level: CapacityLevel, bench: BenchSpec, intent: PrefixIntent) -> CapacityLevel:
    """The level with the prefix reuse its chat or trace workload intended, in percent."""
    if bench.workload not in CLOSED_LOOP_WORKLOADS or intent.rate is None:
        return level
    return replace(level, intended_prefix_hit_rate_pct=100.0 * intent.rate)


async def measure_rate_level(
    client: httpx.AsyncClient,
    control: httpx.AsyncClient,
    spec: CapacitySpec,
    words: int,
    step: int,
    scale: float,
    cancel: asyncio.Event,
) -> CapacityLevel:
    """Poisson arrivals at step x rate_step req/s (server time); the first fifth is warm-up.

    A queue that keeps growing (arrivals faster than the engine serves) stops the
    level at once: that rate is over-saturated.
    """
    bench = spec.bench
    rate = step * spec.rate_step
    count = max(2 * spec.min_requests, math.ceil(rate * spec.rate_level_s))
    seed = bench.seed + 7919 * step
    run = LevelRun()
    intent = PrefixIntent()
    stop = asyncio.Event()
    poller = MetricsPoller(control, api_url(bench.base_url, "/metrics"), scale=scale)
    nominal = max(4, math.ceil(rate))
    watch = LevelWatch(
        spec.poll_s, poller, stop, cancel, nominal=nominal,
        steady=lambda: len(run.outcomes) >= count // 5, failed=lambda: run.failed > 0,
        in_flight=lambda: len(run.live),
    )  # fmt: skip
    traffic: Coroutine[Any, Any, object]
    if bench.workload == "trace":
        traffic = replay_trace_level(
            client, bench, words, rate=rate * scale, count=count,
            max_concurrency=spec.max_concurrency, seed=seed, stop=stop, run=run,
            intent=intent,
        )  # fmt: skip
    else:
        traffic = run_level(
            client, api_url(bench.base_url, endpoint_path(bench.endpoint)), bench,
            workload_prompts(bench, words, count, seed), concurrency=spec.max_concurrency,
            rate=rate * scale, seed=bench.seed + step, cancel=stop, run=run,
        )  # fmt: skip
    sample = await watch.run(traffic)
    server = poller.stats(nominal)
    ordered = sorted(run.outcomes, key=lambda o: o.start_s)
    warm = len(ordered) // 5
    level = summarize(
        ClosedLoop(measured=ordered[warm:], warmup=ordered[:warm]),
        concurrency=step,
        slo=spec.slo,
        scale=scale,
        partial=cancel.is_set(),
        server=server if server.samples else None,
    )
    load = client_load(send_lags_s(ordered[warm:]), [sample])
    return replace(
        _with_intent(level, bench, intent),
        request_rate=rate,
        peak_in_flight=watch.peak_in_flight,
        client_bound=load.describe(),
    )
