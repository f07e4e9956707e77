"""The streaming HTTP client: httpx's API over aiohttp, and a measured SSE fast path.

Why this transport: httpx's default transport parses ~62k tok/s per core at
256 streams, httpx over `httpx-aiohttp` ~173k (docs/DESIGN.md section 4;
tests/perf/bench_client.py re-measures it). Limits and timeouts are sized
for the run: a connection per stream, no pool wait, and a read timeout long
enough for a long prefill behind a full queue.

SSE fast path: raw byte chunks are split on blank lines and only `data:`
lines are decoded. Each token event is timestamped when it has been decoded,
as `vllm bench serve` (0.32, `async_request_openai_completions`) does: when a
server sends a whole stream in one write (vLLM's API server does when its
event loop falls behind the engine), the gaps between its events are then the
parse time on both clients, not zero on one and microseconds on the other.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Mapping
from typing import Any

import httpx

from tui.bench.http_phases import CURRENT, PhaseMarks, aiohttp_trace, httpcore_trace
from tui.bench.model import RequestOutcome

TRANSPORTS = ("httpx-aiohttp", "httpx")
DEFAULT_TRANSPORT = "httpx-aiohttp"


def make_client(
    *,
    max_connections: int,
    read_timeout_s: float,
    connect_timeout_s: float = 10.0,
    transport: str = DEFAULT_TRANSPORT,
    api_key: str | None = None,
) -> httpx.AsyncClient:
    """An AsyncClient with one connection per stream and run-sized timeouts."""
    limits = httpx.Limits(
        max_connections=max_connections + 4,
        max_keepalive_connections=max_connections + 4,
        keepalive_expiry=30.0,
    )
    timeout = httpx.Timeout(
        connect=connect_timeout_s, read=read_timeout_s, write=connect_timeout_s, pool=None
    )
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    if transport == "httpx":
        return httpx.AsyncClient(limits=limits, timeout=timeout, headers=headers)
    if transport != "httpx-aiohttp":
        raise ValueError(f"unknown transport {transport!r}; expected one of {TRANSPORTS}")
    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    def session() -> aiohttp.ClientSession:
        """The transport's own session, with the hooks that time each request's phases."""
        connector = aiohttp.TCPConnector(
            keepalive_timeout=limits.keepalive_expiry, limit=limits.max_connections or 0
        )
        return aiohttp.ClientSession(connector=connector, trace_configs=[aiohttp_trace()])

    return httpx.AsyncClient(
        transport=AiohttpTransport(limits=limits, client=session),
        limits=limits,
        timeout=timeout,
        headers=headers,
    )


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_text(data: Mapping[str, Any]) -> str:
    error = data.get("error")
    if isinstance(error, Mapping):
        return _short(str(error.get("message") or error))
    return _short(str(error))


MAX_EVENT_BYTES = 4 * 1024 * 1024


class BadChunk(ValueError):
    """An SSE data line that is JSON but not a chunk object (`data: 123`, `data: null`)."""


def _chunk_tokens(data: Any) -> tuple[bool, str | None, tuple[int, int | None] | None]:
    """(has choices, error text, (completion, prompt) tokens) of one decoded SSE chunk.

    Anything that is not the OpenAI chunk shape raises BadChunk: that request fails,
    the run goes on.
    """
    if not isinstance(data, Mapping):
        raise BadChunk(f"chunk is {type(data).__name__}, not a JSON object")
    choices = data.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise BadChunk(f"choices is {type(choices).__name__}, not an array")
    error = _error_text(data) if "error" in data and not choices else None
    usage = data.get("usage")
    tokens = None
    if usage is not None:
        if not isinstance(usage, Mapping):
            raise BadChunk(f"usage is {type(usage).__name__}, not an object")
        completion = usage.get("completion_tokens")
        if completion is not None:
            prompt = usage.get("prompt_tokens")
            for value in (completion, prompt):
                if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                    raise BadChunk("usage token counts are not integers")
            tokens = (completion, prompt)
    return bool(choices), error, tokens


def _choice_text(choice: Any) -> str:
    if not isinstance(choice, Mapping):
        return ""
    delta = choice.get("delta")
    if isinstance(delta, Mapping):
        return str(delta.get("content") or "")
    return str(choice.get("text") or "")


async def stream_request(
    client: httpx.AsyncClient,
    url: str,
    payload: Mapping[str, Any],
    outcome: RequestOutcome,
    *,
    read_timeout_s: float | None = None,
    total_timeout_s: float | None = None,
    text_parts: list[str] | None = None,
) -> RequestOutcome:
    """Send one streaming request and fill `outcome`; never raises except on cancellation.

    Two deadlines end a request that would otherwise never finish: `read_timeout_s`
    without a token (SSE keep-alive comments do not count, so a server that only
    sends those, or hangs after its headers, is caught) and `total_timeout_s` for
    the whole request. With `text_parts`, the generated text is collected too
    (multi-turn workloads send the assistant's actual answer back).
    """
    # A watchdog on the loop, not a timer moved per token: the hot path only stores
    # the time of the last token (rescheduling a timer per token halved the client's
    # ceiling). It re-arms itself until a deadline passes, then cancels the request.
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    perf_counter = time.perf_counter
    activity = [perf_counter()]  # the last token (or the start)
    total_deadline = activity[0] + total_timeout_s if total_timeout_s else math.inf
    idle_s = read_timeout_s or math.inf
    fired: list[str] = []
    handle: asyncio.TimerHandle | None = None

    def check() -> None:
        nonlocal handle
        now = perf_counter()
        if now >= total_deadline or now >= activity[0] + idle_s:
            fired.append("total" if now >= total_deadline else "idle")
            assert task is not None
            task.cancel()
            return
        due = min(total_deadline, activity[0] + idle_s)
        handle = loop.call_later(due - now, check)

    if task is not None and (total_timeout_s or read_timeout_s):
        check()
    try:
        await _stream(client, url, payload, outcome, activity, read_timeout_s, text_parts)
    except asyncio.CancelledError:
        if not fired or task is None or task.uncancel() > 0:
            raise  # not ours, or the run was cancelled as well
        outcome.end_s = perf_counter()
        if fired[0] == "total":
            outcome.error = f"request ran past its {total_timeout_s:g} s total deadline"
        else:
            what = "token" if outcome.chunks else "first token"
            outcome.error = f"no {what} for {read_timeout_s:g} s (stalled stream or server)"
    finally:
        if handle is not None:
            handle.cancel()
    return outcome


async def _stream(
    client: httpx.AsyncClient,
    url: str,
    payload: Mapping[str, Any],
    outcome: RequestOutcome,
    activity: list[float],
    read_timeout_s: float | None,
    text_parts: list[str] | None = None,
) -> RequestOutcome:
    perf_counter = time.perf_counter
    loads = json.loads
    start = perf_counter()
    outcome.start_s = start
    last_choice_at = 0.0
    done = False
    marks = PhaseMarks(send_start=start)
    phases = CURRENT.set(marks)
    try:
        async with client.stream(
            "POST", url, json=payload, extensions={"trace": httpcore_trace}
        ) as response:
            CURRENT.reset(phases)
            outcome.connect_s, outcome.send_s, outcome.wait_s = marks.phases()
            if response.status_code != 200:
                body = (await response.aread()).decode(errors="replace")
                outcome.error = f"HTTP {response.status_code}: {_short(body)}"
                return outcome
            # Each byte is scanned once (a huge event sent in small pieces stays linear),
            # and an event that never ends fails the request instead of filling memory.
            buffer = bytearray()
            async for chunk in response.aiter_raw():
                if chunk.startswith(b"\n") and buffer.endswith(b"\r"):
                    del buffer[-1]  # a \r\n split across two reads
                if b"\r" in chunk:
                    chunk = chunk.replace(b"\r\n", b"\n")
                scan_from = max(0, len(buffer) - 1)
                buffer += chunk
                cut = buffer.rfind(b"\n\n", scan_from)
                if cut < 0:
                    if len(buffer) > MAX_EVENT_BYTES:
                        raise BadChunk(f"an SSE event over {MAX_EVENT_BYTES >> 20} MiB")
                    continue
                events = bytes(buffer[:cut]).split(b"\n\n")
                del buffer[: cut + 2]
                for event in events:
                    for line in event.split(b"\n"):
                        if not line.startswith(b"data:"):
                            continue
                        body_bytes = line[5:].strip()
                        if body_bytes == b"[DONE]":
                            done = True
                            continue
                        data = loads(body_bytes)
                        # fast path: a token chunk (a dict with a non-empty list of choices)
                        if (
                            type(data) is dict
                            and type(data.get("choices")) is list
                            and data["choices"]
                            and data.get("usage") is None
                        ):
                            has_choices, error, tokens = True, None, None
                        else:
                            has_choices, error, tokens = _chunk_tokens(data)
                        if has_choices:
                            now = perf_counter()
                            if text_parts is not None:
                                text_parts.append(_choice_text(data["choices"][0]))
                            if outcome.chunks == 0:
                                outcome.ttft_s = now - start
                            else:
                                outcome.itl_s.append(now - last_choice_at)
                            outcome.chunks += 1
                            last_choice_at = now
                            activity[0] = now
                        elif error is not None:
                            outcome.error = f"server error in stream: {error}"
                        if tokens is not None:
                            outcome.output_tokens = tokens[0]
                            outcome.prompt_tokens = tokens[1] or outcome.prompt_tokens
                            outcome.usage_seen = True
    except httpx.TimeoutException as error:
        kind = type(error).__name__
        limit = f" after {read_timeout_s:g} s" if read_timeout_s and kind == "ReadTimeout" else ""
        outcome.error = f"{kind}{limit} (stalled stream or server)"
    except httpx.HTTPError as error:
        outcome.error = f"{type(error).__name__}: {_short(str(error)) or 'connection lost'}"
    except (ValueError, RecursionError) as error:  # JSONDecodeError, BadChunk, deep JSON
        outcome.error = f"bad SSE data: {_short(str(error)) or type(error).__name__}"
    finally:
        outcome.end_s = perf_counter()
        if CURRENT.get() is marks:
            CURRENT.reset(phases)
    if outcome.error:
        return outcome
    if outcome.chunks == 0:
        outcome.error = "stream ended without any token"
    elif not done:
        outcome.error = "stream ended before [DONE]"
    else:
        outcome.latency_s = last_choice_at - start
        outcome.success = True
    return outcome
