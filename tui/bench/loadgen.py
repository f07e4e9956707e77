"""One level of load in one process: closed loop or open loop, cancellable.

Closed loop keeps `concurrency` requests in flight until `prompts` run out.
Open loop starts requests at gamma-distributed gaps (Poisson when
burstiness is 1), the first at once, as vLLM's client does, with
`concurrency` as the in-flight cap. Cancelling stops dispatch and ends the
in-flight streams; what completed before is kept.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from tui.bench.client import stream_request
from tui.bench.model import RequestOutcome
from tui.bench.workload import BenchSpec, arrival_gaps_s, request_payload


@dataclass(slots=True)
class LevelRun:
    """What one process saw of a level; `in_flight` lets progress count live tokens."""

    outcomes: list[RequestOutcome] = field(default_factory=list)
    in_flight: set[int] = field(default_factory=set)
    live: dict[int, RequestOutcome] = field(default_factory=dict)
    cancelled: int = 0
    partial: bool = False

    def tokens_so_far(self) -> int:
        """Output tokens of finished requests plus chunks of streams still running."""
        finished = sum(
            outcome.output_tokens if outcome.usage_seen else outcome.chunks
            for outcome in self.outcomes
            if outcome.success
        )
        return finished + sum(outcome.chunks for outcome in self.live.values())

    @property
    def failed(self) -> int:
        return sum(not outcome.success for outcome in self.outcomes)


async def drive_requests(
    client: httpx.AsyncClient,
    url: str,
    run: LevelRun,
    count: int,
    *,
    concurrency: int,
    cancel: asyncio.Event,
    pace: Callable[[int], Awaitable[float | None]],
    request: Callable[[int], tuple[dict[str, Any], int]],
    read_timeout_s: float | None,
    total_timeout_s: float | None = None,
    on_outcome: Callable[[RequestOutcome], None] | None = None,
) -> LevelRun:
    """Stream requests 0..count-1, each after `pace(index)`, at most `concurrency` in flight.

    The one dispatch loop of every level (closed, open and trace replay):
    `request(index)` gives the payload and its prompt tokens. Cancelling stops
    dispatch and ends the in-flight streams; what completed before is kept.
    Each request knows when it was due (`scheduled_s`): the time `pace` returns (its
    arrival), or, when a slot was the wait, the moment that slot freed, so a client
    that falls behind shows as send lag (tui.bench.client_load).
    """
    slots = asyncio.Semaphore(max(1, concurrency))
    tasks: set[asyncio.Task[None]] = set()
    started = time.perf_counter()
    freed = deque([started] * max(1, concurrency))  # slots in the order they free

    async def one(index: int, due_s: float) -> None:
        payload, prompt_tokens = request(index)
        outcome = RequestOutcome(
            prompt_tokens=prompt_tokens, scheduled_s=due_s, model=str(payload.get("model", ""))
        )
        run.live[index] = outcome
        try:
            await stream_request(
                client,
                url,
                payload,
                outcome,
                read_timeout_s=read_timeout_s,
                total_timeout_s=total_timeout_s,
            )
        finally:
            freed.append(time.perf_counter())
            slots.release()
            run.live.pop(index, None)
        run.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    async def dispatch() -> None:
        for index in range(count):
            due = await pace(index)
            await slots.acquire()
            task = asyncio.create_task(one(index, max(due or started, freed.popleft())))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        while tasks:
            await asyncio.gather(*list(tasks))

    dispatcher = asyncio.create_task(dispatch())
    stopper = asyncio.create_task(cancel.wait())
    await asyncio.wait({dispatcher, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    if not dispatcher.done():
        run.partial = True
        dispatcher.cancel()
        pending = list(tasks)
        run.cancelled = len(pending)
        for task in pending:
            task.cancel()
        await asyncio.gather(dispatcher, *pending, return_exceptions=True)
    else:
        dispatcher.result()
    return run


async def run_level(
    client: httpx.AsyncClient,
    url: str,
    spec: BenchSpec,
    prompts: Sequence[str],
    *,
    concurrency: int,
    rate: float | None,
    seed: int,
    cancel: asyncio.Event,
    run: LevelRun | None = None,
    on_outcome: Callable[[RequestOutcome], None] | None = None,
) -> LevelRun:
    """Send every prompt under the level's discipline; returns when done or cancelled."""
    gaps = arrival_gaps_s(rate or 0.0, spec.burstiness, seed)
    due = [time.perf_counter()]

    async def pace(index: int) -> float | None:
        """Open loop: sleep until the next arrival, on one schedule (late sends catch up)."""
        if not rate:
            return None
        if index:
            due[0] += next(gaps)
            delay = due[0] - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        return due[0]

    drawn = spec.drawn_lengths(len(prompts), seed)  # the lengths the prompts were made to

    def request(index: int) -> tuple[dict[str, Any], int]:
        if drawn is not None:
            size, output, _ = drawn[index]
            return request_payload(spec, prompts[index], output, index), size
        return request_payload(spec, prompts[index], index=index), spec.input_tokens

    return await drive_requests(
        client,
        url,
        run if run is not None else LevelRun(),
        len(prompts),
        concurrency=concurrency,
        cancel=cancel,
        pace=pace,
        request=request,
        read_timeout_s=spec.read_timeout_s,
        total_timeout_s=spec.request_timeout_s,
        on_outcome=on_outcome,
    )
