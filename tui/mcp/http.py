"""`servedeck mcp --http`: streamable HTTP on 127.0.0.1 only, behind a bearer token.

The token is `SERVEDECK_MCP_TOKEN`, else the first line of `--token-file`, else a fresh
random one (`tui.web.access.new_token`, as `servedeck serve` makes) printed once to
stderr. Every request without `Authorization: Bearer <token>` is answered 401 before
the SDK sees it; the comparison is constant-time (`AccessToken.matches`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from tui.core.errors import UsageError
from tui.web.access import AccessToken, new_token

BIND_HOST = "127.0.0.1"
TOKEN_ENV = "SERVEDECK_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
PATH = "/mcp"


def chosen_token(token_file: str | None) -> tuple[str, bool]:
    """(the token, whether it was generated here and must be shown once)."""
    given = os.environ.get(TOKEN_ENV)
    where = f"${TOKEN_ENV}"
    if given is None and token_file:
        where = token_file
        try:
            given = Path(token_file).read_text(encoding="utf-8").split("\n", 1)[0]
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or "not UTF-8 text"
            raise UsageError(f"--token-file {token_file}: cannot read it ({reason})") from None
    if given is None:
        return new_token(), True
    token = given.strip()
    if len(token) < MIN_TOKEN_CHARS or any(ch.isspace() for ch in token):
        raise UsageError(
            f"{where}: the token must be at least {MIN_TOKEN_CHARS} characters, no spaces"
        )
    return token, False


class BearerGuard:
    """An ASGI wrapper: 401 for an HTTP request without the bearer token, else the app."""

    def __init__(self, app: ASGIApp, token: AccessToken) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorised(scope):
            body = b'{"error": "servedeck mcp: missing or wrong bearer token"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b'Bearer realm="servedeck"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorised(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, credential = value.decode("latin-1").partition(" ")
                return scheme.lower() == "bearer" and self.token.matches(credential.strip())
        return False


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: `serve_http` stops it, so the caller's
    `finally` (closing the Deck, ending the simulator's processes) always runs."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def listening_socket(port: int) -> socket.socket:
    try:
        return socket.create_server((BIND_HOST, port))
    except OSError as error:
        raise UsageError(f"cannot listen on {BIND_HOST}:{port}: {error.strerror}") from None


async def serve_http(app: Any, sock: socket.socket, token: str, generated: bool) -> None:
    """Serve the Starlette app until SIGINT or SIGTERM; print where (and a new token) once."""
    port = sock.getsockname()[1]
    guarded = BearerGuard(app, AccessToken(token, port))
    server = _Server(uvicorn.Config(guarded, log_level="warning", log_config=None, lifespan="on"))
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, lambda: setattr(server, "should_exit", True))
    print(f"servedeck mcp: listening on http://{BIND_HOST}:{port}{PATH}", file=sys.stderr)
    if generated:
        print(f"servedeck mcp: token (shown once): {token}", file=sys.stderr)
    sys.stderr.flush()
    try:
        await server.serve(sockets=[sock])
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
