"""The simulated engine: continuous batching with chunked prefill, like vLLM V1's scheduler.

One asyncio task runs the scheduler; each iteration is one batch step and one
timer, however many requests are running. Every step has a token budget
(`max_num_batched_tokens`): each decoding request takes one token of it, and
what is left goes to prompt chunks, first of running requests still in
prefill, then of waiting requests, which join the running batch at that step
(first come, first served). A step lasts `ServerSettings.batch_step_s`:
`decode_step_s * (1 + decode_alpha * (decoding - 1))` when requests are
decoding, plus `prefill_tokens / prefill_tok_s` for the prompt chunks in it.
So decoding never stops while prompts are prefilled (no waves of all-prefill
steps), and a request's TTFT is its queueing behind earlier prompts plus its
own prefill. Identical requests that all start at once stay in lockstep here
as on vLLM: they finish in the same step and come back together, so each
round's prompts fill whole budgets again (a full budget of the seed's 8,192
tokens at 3,000 tok/s is a 2.7 s step); users whose requests are spread out
see steps of a few prompts at most. A request admitted into an idle engine gets its first token
after exactly `prompt_tokens / prefill_tok_s` (prompts within the budget);
one that arrives mid-step waits for the step to end (queue time). At most
`max_batch` requests run; admission reserves prompt + max_tokens of KV cache,
so the simulator never preempts (`num_preemptions` stays 0).

`time_scale` > 1 runs the same schedule faster than real time (a fast clock
for capacity searches). Steps that follow each other without a pause keep to
an ideal timeline: each ends at an absolute deadline (the last one's plus the
model's step), so a step that starts late is shortened by the lateness
instead of shifting every later token (`timeline_start_s`). Else the
simulator's own event loop would add its overshoot to every step (epoll waits
whole ms from when it is entered, after the loop's work of writing the step's
tokens: +0.1 to +0.7 ms a 4 ms step, moving with the machine's load), and its
truth would move with the machine. The catch-up is bounded, so a stall still
looks like one: on a fast clock by CATCH_UP_S (a wake-up delay multiplied by
the scale would otherwise slow the clock); at the real-time scale of 1 by the
step itself (up to CATCH_UP_S), so no step is ever shorter than 0 and no
tokens come in a burst. A later start, a stall or an idle engine starts the
timeline again where it is.

Every token time recorded is the moment the step ended and the token was
handed to the HTTP layer. A streaming request's record also holds when the HTTP layer
wrote its first and last token chunk to the socket (`first_sent_s`, `last_sent_s`):
a starved server's handlers run after the step's end, so those are what a client can
observe at best.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from tui.sim.histograms import HISTOGRAM_BUCKETS, Histogram
from tui.sim.spec import ServerSettings
from tui.sim.spec_decode import SimSpecDecode
from tui.sim.tokens import output_pieces


@dataclass(slots=True, eq=False)
class SimRequest:
    """One request from arrival to its last token."""

    number: int
    request_id: str
    prompt_tokens: int
    max_tokens: int
    pieces: list[str]
    arrival_s: float
    scheduled_s: float | None = None
    first_token_s: float | None = None
    last_token_s: float | None = None
    emitted: int = 0
    prefilled: int = 0  # prompt tokens computed so far (chunked prefill)
    finished: bool = False
    aborted: bool = False
    event: asyncio.Event = field(default_factory=asyncio.Event)
    first_sent_s: float | None = None  # loop time the first token chunk was written
    last_sent_s: float | None = None  # loop time the latest token chunk was written
    record: dict[str, object] | None = None  # its ground truth, once finished
    lora: str | None = None  # the LoRA adapter it names as its model (None: the base model)


# How late a step may start and still be pulled back onto the ideal timeline (real s).
CATCH_UP_S = 0.02


def timeline_start_s(now_s: float, ideal_end_s: float, step_real_s: float, fast: bool) -> float:
    """When a step that can start at `now_s` begins: at the last step's ideal end when it
    is late by at most the catch-up bound (this step is shortened by the lateness), else now.

    The bound is CATCH_UP_S on a fast clock; at real time also the step's own length, so
    the step never lasts less than 0 and a longer delay (a loaded machine's hiccup, a
    suspended process) starts the timeline again instead of bursting tokens after it.
    """
    bound_s = CATCH_UP_S if fast else min(CATCH_UP_S, step_real_s)
    return ideal_end_s if 0.0 <= now_s - ideal_end_s <= bound_s else now_s


class SimEngine:
    """Scheduler, counters and ground truth of the simulated inference server."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.waiting: collections.deque[SimRequest] = collections.deque()
        self.running: list[SimRequest] = []
        self.histograms = {name: Histogram(b) for name, b in HISTOGRAM_BUCKETS.items()}
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.prefix_queries_total = 0
        self.prefix_hits_total = 0
        self.success: collections.Counter[str] = collections.Counter()
        self.busy_s = 0.0
        self.stall_until_s = 0.0
        self.slow_factor = 1.0  # a slow degradation (tui.sim.hang): every step this much longer
        self.truth: list[dict[str, object]] = []
        self.created_s = time.time()
        self._number = 0
        self._ids = random.Random(settings.seed)
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._wall_offset_s = time.time() - self._loop.time()
        truth_path = Path(settings.state_dir) / "truth.jsonl"
        self._truth_file = truth_path.open("a", encoding="utf-8")
        self._task: asyncio.Task[None] | None = None
        self._ideal_end_s = -1.0
        self._last_end_s = -1.0  # loop time the last step ended
        # Busy steps that started later than the catch-up bound (the machine held the
        # simulator): each starts the timeline again, its delay kept in the token times.
        self.timeline_restarts = 0
        tokens = settings.num_speculative_tokens
        self.spec = (
            SimSpecDecode(tokens, settings.spec_acceptance, settings.seed) if tokens else None
        )

    # -- public ---------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="sim-engine")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._truth_file.close()

    def wall(self, loop_s: float) -> float:
        """Loop (monotonic) time as wall-clock seconds since the epoch."""
        return loop_s + self._wall_offset_s

    def submit(self, prompt_tokens: int, max_tokens: int, cached_tokens: int = 0) -> SimRequest:
        """Queue a request; its tokens appear in `pieces[:emitted]` as steps end.

        `cached_tokens` of the prompt hit the prefix cache: they are never prefilled.
        """
        self._number += 1
        cached = min(max(cached_tokens, 0), max(prompt_tokens, 1) - 1)
        self.prefix_queries_total += max(prompt_tokens, 1)
        self.prefix_hits_total += cached
        request = SimRequest(
            number=self._number,
            request_id=f"{self._ids.getrandbits(64):016x}",
            prompt_tokens=max(prompt_tokens, 1),
            max_tokens=max(max_tokens, 1),
            pieces=output_pieces(self.settings.seed, self._number, max(max_tokens, 1)),
            arrival_s=self._loop.time(),
            prefilled=cached,
        )
        self.histograms["request_params_max_tokens"].observe(request.max_tokens)
        self.waiting.append(request)
        self._wake.set()
        return request

    def abort(self, request: SimRequest) -> None:
        """The client went away: free its slot and KV cache at once, as vLLM's abort does.

        A step already under way still computes it (its token is dropped); the next
        step is planned without it, so it takes no batch slot, budget or step time.
        """
        if not request.finished:
            request.aborted = True
            if request in self.waiting:
                self.waiting.remove(request)
            elif request in self.running:
                self.running.remove(request)
            self._finish(request, "abort", self._loop.time())

    def mark_sent(self, request: SimRequest) -> None:
        """The HTTP layer is writing a chunk of the request's tokens to its socket now.

        Called before the write, so a client that has read the last token finds its
        `last_sent_s` in the truth already (the record of a finished request is updated).
        """
        now = self._loop.time()
        if request.first_sent_s is None:
            request.first_sent_s = now
        request.last_sent_s = now
        if request.record is not None:
            request.record["first_sent_s"] = self.wall(request.first_sent_s)
            request.record["last_sent_s"] = self.wall(now)

    def stall(self, seconds: float) -> None:
        self.stall_until_s = self._loop.time() + max(seconds, 0.0)
        self._wake.set()

    def kv_usage(self) -> float:
        used = sum(r.prefilled + r.emitted for r in self.running)
        return min(used / self.settings.kv_cache_tokens, 1.0)

    # -- scheduler ------------------------------------------------------------
    def _admit(self, budget: int) -> list[SimRequest]:
        """Waiting requests that join the batch this step (FCFS, KV reserved up front)."""
        capacity = self.settings.kv_cache_tokens
        reserved = sum(r.prompt_tokens + r.max_tokens for r in self.running)
        admitted: list[SimRequest] = []
        while (
            budget > 0
            and self.waiting
            and len(self.running) + len(admitted) < self.settings.max_batch
        ):
            candidate = self.waiting[0]
            need = candidate.prompt_tokens + candidate.max_tokens
            if reserved + need > capacity and (self.running or admitted):
                break
            self.waiting.popleft()
            reserved += need
            budget -= min(candidate.prompt_tokens - candidate.prefilled, budget)
            admitted.append(candidate)
        return admitted

    def _plan_step(self) -> tuple[list[SimRequest], dict[SimRequest, int], list[SimRequest]]:
        """(decoding requests, prompt chunk per prefilling request, newly admitted)."""
        budget = max(self.settings.max_num_batched_tokens, 1)
        decoding = [r for r in self.running if r.prefilled >= r.prompt_tokens]
        budget -= len(decoding)
        chunks: dict[SimRequest, int] = {}
        for request in self.running:
            if request.prefilled < request.prompt_tokens and budget > 0:
                chunks[request] = min(request.prompt_tokens - request.prefilled, budget)
                budget -= chunks[request]
        admitted = self._admit(budget)
        for request in admitted:
            chunks[request] = min(request.prompt_tokens - request.prefilled, budget)
            budget -= chunks[request]
        return decoding, chunks, admitted

    async def _run(self) -> None:
        loop = self._loop
        fast = self.settings.time_scale != 1.0
        while True:
            if not self.running and not self.waiting:
                self._wake.clear()
                await self._wake.wait()
                self._ideal_end_s = -1.0  # idle: the next step starts when it is woken
            pause = self.stall_until_s - loop.time()
            if pause > 0:
                # Wait on the wake-up event, so a shorter or cleared stall takes effect at once.
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), pause)
                self._ideal_end_s = -1.0  # a stall is never caught up afterwards
                continue
            decoding, chunks, admitted = self._plan_step()
            duration = self.settings.batch_step_s(len(decoding), sum(chunks.values()))
            duration *= self.slow_factor
            real_s = duration / self.settings.time_scale  # a fast clock for capacity tests
            step_start = timeline_start_s(loop.time(), self._ideal_end_s, real_s, fast)
            if self._ideal_end_s >= 0.0 and step_start != self._ideal_end_s:
                self.timeline_restarts += 1  # busy back to back, but held beyond the bound
            # The step's tokens follow the last ones (never the ideal start before them).
            begun_s = max(step_start, self._last_end_s)
            for request in admitted:
                request.scheduled_s = max(step_start, request.arrival_s)
            self.running.extend(admitted)
            self._ideal_end_s = step_start + real_s
            await asyncio.sleep(max(self._ideal_end_s - loop.time(), 0.0))
            step_end = self._last_end_s = loop.time()
            self.busy_s += step_end - begun_s
            self._complete_step(decoding, chunks, step_end, step_end - begun_s)

    def _complete_step(
        self,
        decoding: list[SimRequest],
        chunks: dict[SimRequest, int],
        end_s: float,
        step_s: float,
    ) -> None:
        stepped = set(decoding)
        decoded = 0
        for request in decoding:
            if request.aborted:
                continue
            request.emitted += 1
            request.last_token_s = end_s
            decoded += 1
            request.event.set()
            if request.emitted >= request.max_tokens:
                self._finish(request, "length", end_s)
        if decoded:
            self.histograms["inter_token_latency_seconds"].observe(step_s, decoded)
            if self.spec is not None:
                self.spec.observe(decoded)
        first_tokens = 0
        for request, chunk in chunks.items():
            if request.aborted:
                continue
            request.prefilled += chunk
            if request.prefilled < request.prompt_tokens:
                continue
            self.prompt_tokens_total += request.prompt_tokens  # vLLM counts a finished prefill
            # The last prompt chunk also samples the first output token, as in vLLM.
            stepped.add(request)
            request.emitted = 1
            first_tokens += 1
            request.first_token_s = request.last_token_s = end_s
            request.event.set()
            if request.max_tokens <= 1:
                self._finish(request, "length", end_s)
        self.generation_tokens_total += decoded + first_tokens
        self.histograms["iteration_tokens_total"].observe(sum(chunks.values()) + decoded)
        self.running = [request for request in self.running if not request.finished]

    def _finish(self, request: SimRequest, reason: str, end_s: float) -> None:
        request.finished = True
        request.event.set()
        self.success["abort" if request.aborted else reason] += 1
        wall = self.wall
        queue_s = (request.scheduled_s or end_s) - request.arrival_s
        ttft_s = (
            None if request.first_token_s is None else request.first_token_s - request.arrival_s
        )
        decode_s = (
            (request.last_token_s or end_s) - request.first_token_s
            if request.first_token_s is not None
            else 0.0
        )
        if ttft_s is not None:
            prefill_s = request.first_token_s - (request.scheduled_s or request.first_token_s)  # type: ignore[operator]
            h = self.histograms
            h["time_to_first_token_seconds"].observe(ttft_s)
            h["e2e_request_latency_seconds"].observe(end_s - request.arrival_s)
            h["request_queue_time_seconds"].observe(queue_s)
            h["request_prefill_time_seconds"].observe(prefill_s)
            h["request_decode_time_seconds"].observe(decode_s)
            h["request_inference_time_seconds"].observe(end_s - (request.scheduled_s or end_s))
            h["request_prompt_tokens"].observe(request.prompt_tokens)
            h["request_generation_tokens"].observe(request.emitted)
            if request.emitted > 1:
                h["request_time_per_output_token_seconds"].observe(decode_s / (request.emitted - 1))
        record: dict[str, object] = {
            "request_id": request.request_id,
            "number": request.number,
            "arrival_s": wall(request.arrival_s),
            "scheduled_s": None if request.scheduled_s is None else wall(request.scheduled_s),
            "first_token_s": None if request.first_token_s is None else wall(request.first_token_s),
            "last_token_s": None if request.last_token_s is None else wall(request.last_token_s),
            "first_sent_s": None if request.first_sent_s is None else wall(request.first_sent_s),
            "last_sent_s": None if request.last_sent_s is None else wall(request.last_sent_s),
            "prompt_tokens": request.prompt_tokens,
            "output_tokens": request.emitted,
            "max_tokens": request.max_tokens,
            "lora": request.lora,  # the adapter it named (None: the base model)
            "finish_reason": "abort" if request.aborted else reason,
            "queue_s": queue_s,
            "ttft_s": ttft_s,
            "decode_s": decode_s,
        }
        request.record = record
        self.truth.append(record)
        if len(self.truth) > 200_000:
            del self.truth[:100_000]
        # The file keeps what is known at the finish: the last chunk is written after it.
        kept = {k: v for k, v in record.items() if k not in ("first_sent_s", "last_sent_s")}
        self._truth_file.write(json.dumps(kept) + "\n")
        self._truth_file.flush()
