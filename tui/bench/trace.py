"""The `trace` workload: replay a JSONL request trace at a chosen speed.

One JSON object per line. Mooncake's fields are accepted as they are:
`timestamp` (ms since the trace start), `input_length`, `output_length` and
`hash_ids` (ids of the prompt's 512-token blocks: equal ids mean an equal
prefix); `input_tokens`/`output_tokens` and `prefix_id` (one shared block
chain per id) are accepted too. Each block id always becomes the same text,
so requests that share leading block ids share a prompt prefix, and the
intended prefix-cache hit rate is the share of prompt tokens in leading blocks
already sent. Requests start at `timestamp / speed` (at most `concurrency` in
flight); the output length is the trace's (ignore_eos keeps it exact).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from tui.bench.chat_loop import PrefixIntent
from tui.bench.loadgen import LevelRun, drive_requests
from tui.bench.workload import BenchSpec, random_words, request_payload
from tui.bench.workloads import DatasetError

BLOCK_TOKENS = 512


@dataclass(frozen=True, slots=True)
class TraceRequest:
    at_s: float
    input_tokens: int
    output_tokens: int
    blocks: tuple[int, ...] = ()


def load_trace(path: str) -> list[TraceRequest]:
    """Every request of a JSONL trace, in time order; a bad line names the file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error.strerror or error})") from None
    requests = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            inputs = int(row.get("input_length", row.get("input_tokens")))
            outputs = int(row.get("output_length", row.get("output_tokens")))
            at_s = float(row.get("timestamp", 0)) / 1000.0
            blocks = row.get("hash_ids")
            if blocks is None and row.get("prefix_id") is not None:
                whole = max(inputs // BLOCK_TOKENS, 0)
                blocks = [zlib.crc32(f"{row['prefix_id']}:{i}".encode()) for i in range(whole)]
            blocks = tuple(int(b) for b in blocks or ())
        except (ValueError, TypeError, AttributeError):
            raise DatasetError(
                f"{path}:{number}: expected input_length, output_length and timestamp"
            ) from None
        if inputs < 1 or outputs < 1:
            raise DatasetError(f"{path}:{number}: lengths must be at least 1")
        requests.append(TraceRequest(at_s, inputs, outputs, blocks))
    if not requests:
        raise DatasetError(f"{path}: no requests")
    return sorted(requests, key=lambda r: r.at_s)


def trace_prompts(
    trace: list[TraceRequest], words_per_token: float, seed: int
) -> tuple[list[str], PrefixIntent]:
    """The prompt of every request, and the prefix-cache reuse the trace intends."""
    block_words = max(1, round(BLOCK_TOKENS * words_per_token))
    block_text: dict[int, str] = {}
    seen: set[tuple[int, ...]] = set()
    intent = PrefixIntent()
    rng = random.Random(seed)
    prompts = []
    for request in trace:
        usable = request.blocks[: request.input_tokens // BLOCK_TOKENS]
        parts = []
        for block in usable:
            if block not in block_text:
                block_text[block] = random_words(block_words, random.Random(block ^ seed))
            parts.append(block_text[block])
        reused = 0
        for depth in range(1, len(usable) + 1):
            if usable[:depth] in seen:
                reused = depth
        seen.update(usable[:depth] for depth in range(1, len(usable) + 1))
        rest = request.input_tokens - len(usable) * BLOCK_TOKENS
        if rest > 0:
            parts.append(random_words(max(1, round(rest * words_per_token)), rng))
        prompts.append("".join(parts))
        intent.prompt_tokens += request.input_tokens
        intent.reusable_tokens += reused * BLOCK_TOKENS
    return prompts, intent


async def replay(
    client: httpx.AsyncClient,
    url: str,
    spec: BenchSpec,
    trace: list[TraceRequest],
    prompts: list[str],
    *,
    concurrency: int,
    cancel: asyncio.Event,
    run: LevelRun,
) -> LevelRun:
    """Start each request at its time / speed; cancellable, finished requests kept."""
    speed = spec.trace_speed if spec.trace_speed > 0 else 1.0
    start = time.perf_counter()

    async def pace(index: int) -> float:
        due = start + trace[index].at_s / speed
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        return due

    def request(index: int) -> tuple[dict[str, Any], int]:
        wanted = trace[index]
        payload = request_payload(
            replace(spec, output_tokens=wanted.output_tokens), prompts[index], index=index
        )
        return payload, wanted.input_tokens

    return await drive_requests(
        client,
        url,
        run,
        len(trace),
        concurrency=concurrency,
        cancel=cancel,
        pace=pace,
        request=request,
        read_timeout_s=spec.read_timeout_s,
    )
