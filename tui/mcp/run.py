"""Run the MCP server of one profile until its client leaves or a signal stops it.

The Deck is opened once for the server's life, as the console opens it, so every tool
call of every client sees the same box (the demo's one simulator, a host's one SSH
connection), and is closed on the way out, whatever ends the server.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys

import anyio

from tui.deck import Deck
from tui.mcp.server import build_server


async def serve(
    deck: Deck,
    *,
    allow_actions: bool,
    http: tuple[socket.socket, str, bool] | None = None,
) -> None:
    """Serve over stdio, or over HTTP with (listening socket, token, token generated)."""
    one_line_logs()
    try:
        app = build_server(deck, allow_actions=allow_actions)
        if http is None:
            await _until_signal(app.run_stdio_async())
        else:
            from tui.mcp.http import serve_http

            sock, token, generated = http
            await serve_http(app.streamable_http_app(), sock, token, generated)
    finally:
        await deck.close()


async def _until_signal(work: object) -> None:
    """Await the stdio server; SIGINT or SIGTERM cancels it (the Deck still closes)."""
    assert asyncio.iscoroutine(work)
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


class _OneLine(logging.Filter):
    """A record with a traceback becomes one line: what failed, its type and message."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, anyio.ClosedResourceError):
            return False  # a client ended its session while its stream was open: not a fault
        if error is not None:
            record.msg = f"{record.getMessage()}: {type(error).__name__}: {error}".rstrip(": ")
            record.args, record.exc_info, record.exc_text = None, None, None
        return True


def one_line_logs() -> None:
    """The SDK's and uvicorn's warnings on stderr, one line each, never a traceback (the
    SDK logs one when a client ends its session while a stream is open). Set before the
    SDK's own logging setup, which then leaves the root logger as it is."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("servedeck mcp: %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_OneLine())
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
