"""Chat and trace workloads inside a capacity level (tui.bench.capacity.runner).

`chat`: each of the N users holds conversations of `chat_turns` turns; every
turn sends the whole history with the answers the server actually streamed,
and a finished conversation is followed by a fresh one. `trace`: the users
take the trace's requests in order (its input/output lengths and shared
prefix blocks; the timestamps are ignored in a closed loop), cycling it when
a level needs more; searching by rate replays the trace's own arrival times
at the speed that gives the level's mean rate. As for every workload, each
user's first request is warm-up and every level gets fresh prompts (its own
seed), so nothing is served from a cache an earlier level filled. The
prefix-cache reuse each workload intends is counted per level (PrefixIntent),
next to the hit rate the server's counters measure.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx

from tui.bench.chat_loop import PrefixIntent, chat_questions
from tui.bench.client import stream_request
from tui.bench.loadgen import LevelRun
from tui.bench.model import RequestOutcome
from tui.bench.trace import TraceRequest, load_trace, replay, trace_prompts
from tui.bench.workload import BenchSpec, api_url, endpoint_path, request_payload

if TYPE_CHECKING:
    from tui.bench.capacity.measure import ClosedLoop

CLOSED_LOOP_WORKLOADS = ("chat", "trace")


def check_workload(bench: BenchSpec, by: str) -> None:
    """Refuse what a capacity search cannot run, in one line (ValueError)."""
    if bench.workload == "chat" and by == "rate":
        raise ValueError(
            "the chat workload is searched by concurrent users (a conversation waits for "
            "its answers); use --by concurrency"
        )
    if bench.workload == "trace":
        load_trace(bench.trace_path)  # DatasetError (a ValueError) names the file and line


def cycled_trace(trace: list[TraceRequest], count: int) -> list[TraceRequest]:
    """`count` requests: the trace, then again after its span, as often as needed.

    Each copy's prefix block ids are its own, so a copy shares prefixes only as
    the trace itself does.
    """
    if not trace:
        return []
    span = trace[-1].at_s - trace[0].at_s
    gap = span / max(len(trace) - 1, 1)
    out = []
    for copy in range(math.ceil(count / len(trace))):
        offset = copy * (span + gap)
        for request in trace:
            blocks = tuple(b ^ (copy * 0x9E3779B1) for b in request.blocks)
            out.append(replace(request, at_s=request.at_s + offset, blocks=blocks))
    return out[:count]


def trace_rate(trace: list[TraceRequest]) -> float | None:
    """The trace's mean arrival rate (requests per second); None when it has no span."""
    span = trace[-1].at_s - trace[0].at_s if trace else 0.0
    return (len(trace) - 1) / span if span > 0 else None


async def run_chat_users(
    client: httpx.AsyncClient,
    bench: BenchSpec,
    words: int,
    *,
    concurrency: int,
    rounds: int,
    seed: int,
    first_tokens: Callable[[int], int],
    stop: asyncio.Event,
    loop_run: ClosedLoop,
    intent: PrefixIntent,
) -> None:
    """`concurrency` users, each sending `rounds` chat turns with their growing history."""
    chat = replace(bench, endpoint="chat")
    url = api_url(bench.base_url, endpoint_path("chat"))
    turns = max(bench.chat_turns, 1)
    talks = math.ceil(rounds / turns)
    questions = chat_questions(words, concurrency * talks, turns, seed)

    async def user(index: int) -> None:
        mine = itertools.chain.from_iterable(
            [None, *talk] for talk in questions[index * talks : (index + 1) * talks]
        )
        messages: list[dict[str, str]] = []
        previous = 0
        sent = 0
        for question in mine:
            if question is None:  # a new conversation
                messages, previous = [], 0
                continue
            if stop.is_set() or sent >= rounds:
                return
            messages.append({"role": "user", "content": question})
            payload = request_payload(chat, question)
            payload["messages"] = list(messages)
            if sent == 0:
                payload["max_completion_tokens"] = first_tokens(index)
            outcome = RequestOutcome(prompt_tokens=bench.input_tokens)
            parts: list[str] = []
            await stream_request(
                client, url, payload, outcome, read_timeout_s=bench.read_timeout_s,
                text_parts=parts,
            )  # fmt: skip
            (loop_run.warmup if sent == 0 else loop_run.measured).append(outcome)
            sent += 1
            if not outcome.success:
                return
            if sent > 1:  # the intent of measured turns, like the server's steady window
                intent.prompt_tokens += outcome.prompt_tokens
                intent.reusable_tokens += min(previous, outcome.prompt_tokens)
            previous = outcome.prompt_tokens + outcome.output_tokens
            messages.append({"role": "assistant", "content": "".join(parts)})

    await _until_done_or_stopped([user(index) for index in range(concurrency)], stop)


async def run_trace_users(
    client: httpx.AsyncClient,
    bench: BenchSpec,
    words: int,
    *,
    concurrency: int,
    rounds: int,
    seed: int,
    stop: asyncio.Event,
    loop_run: ClosedLoop,
    intent: PrefixIntent,
) -> None:
    """`concurrency` users taking the trace's requests in order, `rounds` each."""
    trace = cycled_trace(load_trace(bench.trace_path), concurrency * rounds)
    prompts, wanted = trace_prompts(trace, words / max(bench.input_tokens, 1), seed)
    intent.prompt_tokens += wanted.prompt_tokens
    intent.reusable_tokens += wanted.reusable_tokens
    url = api_url(bench.base_url, endpoint_path(bench.endpoint))
    queue = iter(range(len(trace)))

    async def user(index: int) -> None:
        for turn in range(rounds):
            number = next(queue, None)
            if stop.is_set() or number is None:
                return
            request = trace[number]
            spec = replace(bench, output_tokens=request.output_tokens)
            payload = request_payload(spec, prompts[number])
            outcome = RequestOutcome(prompt_tokens=request.input_tokens)
            await stream_request(client, url, payload, outcome, read_timeout_s=bench.read_timeout_s)
            (loop_run.warmup if turn == 0 else loop_run.measured).append(outcome)

    await _until_done_or_stopped([user(index) for index in range(concurrency)], stop)


async def replay_trace_level(
    client: httpx.AsyncClient,
    bench: BenchSpec,
    words: int,
    *,
    rate: float,
    count: int,
    max_concurrency: int,
    seed: int,
    stop: asyncio.Event,
    run: LevelRun,
    intent: PrefixIntent,
) -> None:
    """The trace's arrivals (cycled to `count`) sped up or slowed to `rate` requests/s (wall)."""
    trace = cycled_trace(load_trace(bench.trace_path), count)
    natural = trace_rate(trace)
    prompts, wanted = trace_prompts(trace, words / max(bench.input_tokens, 1), seed)
    intent.prompt_tokens += wanted.prompt_tokens
    intent.reusable_tokens += wanted.reusable_tokens
    if natural is None:  # every request at one instant: space them evenly at the rate
        trace = [replace(r, at_s=i / rate) for i, r in enumerate(trace)]
        natural = rate
    await replay(
        client, api_url(bench.base_url, endpoint_path(bench.endpoint)),
        replace(bench, trace_speed=rate / natural), trace, prompts,
        concurrency=max_concurrency, cancel=stop, run=run,
    )  # fmt: skip


async def _until_done_or_stopped(
    users: list[Coroutine[Any, Any, None]], stop: asyncio.Event
) -> None:
    """Run the users to their end; a stop cancels those still talking."""
    tasks = [asyncio.create_task(coroutine) for coroutine in users]
    everyone = asyncio.gather(*tasks)
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({everyone, stopper}, return_when=asyncio.FIRST_COMPLETED)  # type: ignore[type-var]
    stopper.cancel()
    for task in tasks:
        task.cancel()
    await asyncio.gather(everyone, stopper, return_exceptions=True)
