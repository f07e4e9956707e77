"""Each request's HTTP phases from the client's own trace hooks: connect, send, wait.

- connect: opening the TCP connection; 0.0 when a kept-alive one was reused;
- send: the request's headers and body written;
- wait: from the request sent to the response's headers (the first byte back).
aiohttp (the default transport) reports them through a `TraceConfig` on its session;
httpx's own transport through httpcore's `trace` extension. Both call back inside the
request's task, so a context variable says which request a callback belongs to. Where
a transport gives no hook, the phases stay None (unknown), never 0.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import aiohttp


@dataclass(slots=True)
class PhaseMarks:
    """perf_counter marks of one request, filled by the hooks while it is sent."""

    connect_start: float = 0.0
    connect_s: float | None = None
    send_start: float = 0.0
    sent: float = 0.0
    headers_in: float = 0.0

    def phases(self) -> tuple[float | None, float | None, float | None]:
        """(connect, send, wait) in seconds; None where a mark is missing."""
        send = self.sent - self.send_start if self.sent and self.send_start else None
        wait = self.headers_in - self.sent if self.headers_in and self.sent else None
        return self.connect_s, send, wait


CURRENT: ContextVar[PhaseMarks | None] = ContextVar("servedeck_http_phases", default=None)


def _marks() -> PhaseMarks | None:
    return CURRENT.get()


async def _connect_start(*_: Any) -> None:
    if (marks := _marks()) is not None:
        marks.connect_start = time.perf_counter()


async def _connect_end(*_: Any) -> None:
    if (marks := _marks()) is not None:
        now = time.perf_counter()
        marks.connect_s = now - marks.connect_start if marks.connect_start else None
        marks.send_start = now


async def _reuse(*_: Any) -> None:
    if (marks := _marks()) is not None:
        marks.connect_s = 0.0
        marks.send_start = time.perf_counter()


async def _sent(*_: Any) -> None:
    if (marks := _marks()) is not None:
        marks.sent = time.perf_counter()


async def _headers_in(*_: Any) -> None:
    if (marks := _marks()) is not None:
        marks.headers_in = time.perf_counter()


def aiohttp_trace() -> aiohttp.TraceConfig:
    """The TraceConfig that marks each request's phases on aiohttp's session."""
    config = aiohttp.TraceConfig()
    config.on_connection_create_start.append(_connect_start)
    config.on_connection_create_end.append(_connect_end)
    config.on_connection_reuseconn.append(_reuse)
    config.on_request_headers_sent.append(_sent)
    config.on_request_chunk_sent.append(_sent)
    config.on_request_end.append(_headers_in)
    return config


async def httpcore_trace(event: str, info: dict[str, Any]) -> None:
    """httpcore's `trace` extension (httpx's own transport): the same marks."""
    marks = _marks()
    if marks is None:
        return
    now = time.perf_counter()
    if event == "connection.connect_tcp.started":
        marks.connect_start = now
    elif event == "connection.connect_tcp.complete":
        marks.connect_s = now - marks.connect_start
    elif event == "http11.send_request_headers.started":
        marks.send_start = now
        if marks.connect_s is None and not marks.connect_start:
            marks.connect_s = 0.0  # no connect event: a kept-alive connection
    elif event == "http11.send_request_body.complete":
        marks.sent = now
    elif event == "http11.receive_response_headers.complete":
        marks.headers_in = now
