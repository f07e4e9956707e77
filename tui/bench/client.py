"""The streaming HTTP client: httpx's API over aiohttp, and a measured SSE fast path.

Why this transport: httpx's default transport parses ~62k tok/s per core at
256 streams, httpx over `httpx-aiohttp` ~173k (DESIGN.md section 4;
tests/perf/bench_client.py re-measures it). Limits and timeouts are sized
for the run: a connection per stream, no pool wait, and a read timeout long
enough for a long prefill behind a full queue.

SSE fast path: raw byte chunks are split on blank lines and only `data:`
lines are decoded; every event in one read shares that read's timestamp
(as vLLM's own client does).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import httpx

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
    from httpx_aiohttp import AiohttpTransport

    return httpx.AsyncClient(
        transport=AiohttpTransport(limits=limits),
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


def _choice_text(choice: Mapping[str, Any]) -> str:
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
    text_parts: list[str] | None = None,
) -> RequestOutcome:
    """Send one streaming request and fill `outcome`; never raises except on cancellation.

    With `text_parts`, the generated text is collected too (multi-turn workloads
    send the assistant's actual answer back).
    """
    perf_counter = time.perf_counter
    loads = json.loads
    start = perf_counter()
    outcome.start_s = start
    last_choice_at = 0.0
    done = False
    try:
        async with client.stream("POST", url, json=payload) as response:
            if response.status_code != 200:
                body = (await response.aread()).decode(errors="replace")
                outcome.error = f"HTTP {response.status_code}: {_short(body)}"
                return outcome
            buffer = b""
            async for chunk in response.aiter_raw():
                now = perf_counter()
                buffer = buffer + chunk if buffer else chunk
                if b"\n\n" not in buffer:
                    if b"\r" in buffer:
                        buffer = buffer.replace(b"\r\n", b"\n")
                    continue
                if b"\r" in buffer:
                    buffer = buffer.replace(b"\r\n", b"\n")
                *events, buffer = buffer.split(b"\n\n")
                for event in events:
                    for line in event.split(b"\n"):
                        if not line.startswith(b"data:"):
                            continue
                        body_bytes = line[5:].strip()
                        if body_bytes == b"[DONE]":
                            done = True
                            continue
                        data = loads(body_bytes)
                        if data.get("choices"):
                            if text_parts is not None:
                                text_parts.append(_choice_text(data["choices"][0]))
                            if outcome.chunks == 0:
                                outcome.ttft_s = now - start
                            else:
                                outcome.itl_s.append(now - last_choice_at)
                            outcome.chunks += 1
                            last_choice_at = now
                        elif "error" in data:
                            outcome.error = f"server error in stream: {_error_text(data)}"
                        usage = data.get("usage")
                        if usage and usage.get("completion_tokens") is not None:
                            outcome.output_tokens = int(usage["completion_tokens"])
                            outcome.prompt_tokens = int(usage.get("prompt_tokens") or 0) or (
                                outcome.prompt_tokens
                            )
                            outcome.usage_seen = True
    except httpx.TimeoutException as error:
        kind = type(error).__name__
        limit = f" after {read_timeout_s:g} s" if read_timeout_s and kind == "ReadTimeout" else ""
        outcome.error = f"{kind}{limit} (stalled stream or server)"
    except httpx.HTTPError as error:
        outcome.error = f"{type(error).__name__}: {_short(str(error)) or 'connection lost'}"
    except ValueError as error:
        outcome.error = f"bad SSE data: {_short(str(error))}"
    finally:
        outcome.end_s = perf_counter()
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
