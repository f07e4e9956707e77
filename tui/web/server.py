"""The web server behind `servedeck serve`: token on every request, a visitor cap,
one console process per visit, each visit audited from start to end.

aiohttp serves textual-serve's terminal script and relays each page's websocket to
its own console process (tui.web.visit_process). No textual import here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web
from textual_serve.download_manager import DownloadManager

from tui.core.audit import append_audit
from tui.web.access import TOKEN_QUERY, AccessToken, new_token
from tui.web.page import console_page, full_page, unauthorized_page
from tui.web.serve_log import ServeLog
from tui.web.visit_process import VisitProcess
from tui.web.visitors import Visit, VisitorSlots

# Browsers that vanish without closing (a phone losing signal) are found within ~2x this.
HEARTBEAT_S = 15.0
# How often a running visit's process tree is recorded, so all of it can be ended.
TREE_RECORD_S = 5.0
# A visitor's page asks for its terminal's size: a sane screen's, never a huge one's.
MAX_COLUMNS = 500
MAX_ROWS = 200
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class ServeSettings:
    """What `servedeck serve` was asked for; the console command is already built."""

    console_argv: tuple[str, ...]
    title: str
    host_label: str
    bind_host: str = "127.0.0.1"
    port: int = 8765
    max_visitors: int = 4
    allow_actions: bool = False
    ssl_context: ssl.SSLContext | None = None
    audit_path: Path | None = None

    @property
    def mode(self) -> str:
        return "browser, actions allowed" if self.allow_actions else "browser, read-only"


def _cells(text: str | None, default: int, maximum: int) -> int:
    try:
        value = int(text or default)
    except ValueError:
        return default
    return min(max(value, 1), maximum)


def terminal_size(width: object, height: object) -> tuple[int, int]:
    """The terminal size a page asks for, within 1..MAX_COLUMNS x 1..MAX_ROWS."""
    return _cells(str(width), 80, MAX_COLUMNS), _cells(str(height), 24, MAX_ROWS)


def _close_reason(code: int | None, error: str, limit_bytes: int = 123) -> bytes:
    """What the page shows when its console ended by itself (a close reason: <= 123 bytes)."""
    if code == 0:
        return b"the console quit"
    head = f"console exit {code}: ".encode()
    error = error.removeprefix("servedeck: error: ")
    tail = error.encode()
    room = limit_bytes - len(head)
    if len(tail) > room:  # keep the end: "...: no such profile file" says more than the path
        tail = "…".encode() + tail[-(room - 3) :]
        tail = tail.decode(errors="ignore").encode()
    return head + tail


class ConsoleServer:
    """Start with `start()`, stop with `close()`; `url` holds the token once started."""

    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self.slots = VisitorSlots(settings.max_visitors)
        self.token: AccessToken | None = None
        self.port = settings.port
        self._token_value = new_token()
        # Every line serve writes (its own and aiohttp's) is escaped and never holds the token.
        self.log = ServeLog([self._token_value])
        self._unroute_logs: Callable[[], None] | None = None
        self._runner: web.AppRunner | None = None
        self._downloads = DownloadManager()
        self._sockets: set[web.WebSocketResponse] = set()
        self._handlers: set[asyncio.Task[object]] = set()

    # --- lifecycle ----------------------------------------------------------------
    async def start(self) -> None:
        app = web.Application(middlewares=[self._require_token])
        static_dir = Path(str(files("textual_serve") / "static"))
        app.add_routes(
            [
                web.get("/", self._index),
                web.get("/ws/{visit}", self._websocket),
                web.static("/static", static_dir),
            ]
        )
        self._unroute_logs = self.log.route_aiohttp()
        # No aiohttp access log: its lines would carry `?token=`; ours are safe_line's.
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            self.settings.bind_host,
            self.settings.port,
            ssl_context=self.settings.ssl_context,
        )
        await site.start()
        if self._runner.addresses:  # the port actually bound (--port 0 picks a free one)
            self.port = int(self._runner.addresses[0][1])
        self.token = AccessToken(self._token_value, self.port)
        self._audit("web.serve.start", bind=f"{self.settings.bind_host}:{self.port}")

    async def close(self) -> None:
        """Close every page's websocket; each handler then ends its console process."""
        for websocket in list(self._sockets):
            with contextlib.suppress(Exception):
                await websocket.close(message=b"server stopping")
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._audit("web.serve.stop", bind=f"{self.settings.bind_host}:{self.port}")
        if self._unroute_logs is not None:
            self._unroute_logs()
            self._unroute_logs = None

    @property
    def url(self) -> str:
        """The address to open, with the token: printed once, never logged."""
        scheme = "https" if self.settings.ssl_context else "http"
        host = self.settings.bind_host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"{scheme}://{host}:{self.port}/?{TOKEN_QUERY}={self._token_value}"

    # --- requests -----------------------------------------------------------------
    @web.middleware
    async def _require_token(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        assert self.token is not None
        allowed, in_query = self.token.presented(request.query, request.cookies, request.headers)
        if not allowed:
            self.log.line(f"401 {request.remote} {request.method} {request.path}")
            return web.Response(
                status=401,
                text=unauthorized_page(),
                content_type="text/html",
                headers={"WWW-Authenticate": 'Bearer realm="servedeck"', **_SECURITY_HEADERS},
            )
        response = await handler(request)
        if not response.prepared:
            response.headers.update(_SECURITY_HEADERS)
            if in_query:
                response.set_cookie(
                    self.token.cookie_name,
                    self.token.value,
                    httponly=True,
                    samesite="Strict",
                    secure=self.settings.ssl_context is not None,
                    path="/",
                )
        return response

    async def _index(self, request: web.Request) -> web.Response:
        if request.method == "HEAD":  # a link preview or a probe: no visit reserved for it
            return web.Response(content_type="text/html")
        visit = self.slots.reserve(request.remote or "?")
        if visit is None:
            self.log.line(f"full: refused {request.remote} ({self.slots.cap} visitors)")
            self._audit("web.visit.refused", remote=request.remote, reason="full")
            return web.Response(
                status=503,
                text=full_page(self.slots.cap),
                content_type="text/html",
                headers={"Retry-After": "30"},
            )
        page = console_page(self.settings.title, self.settings.mode, visit.visit_id)
        return web.Response(text=page, content_type="text/html")

    def _same_origin(self, request: web.Request) -> bool:
        """A page from another site must not drive this console (cross-site websocket)."""
        origin = request.headers.get("Origin")
        return origin is None or urlsplit(origin).netloc == request.host

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if not self._same_origin(request):
            self.log.line(f"403 cross-origin websocket from {request.remote}")
            return web.Response(status=403, text="cross-origin websocket refused")
        visit = self.slots.claim(request.match_info["visit"])
        if visit is None:
            return web.Response(status=409, text="this visit has ended: reload the page")
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            return await self._run_visit(request, visit)
        finally:
            self.slots.release(visit.visit_id)
            self._handlers.discard(task)

    async def _run_visit(self, request: web.Request, visit: Visit) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=HEARTBEAT_S)
        await websocket.prepare(request)
        self._sockets.add(websocket)
        process = VisitProcess(
            self.settings.console_argv,
            {"SERVEDECK_AUDIT_VIA": f"browser {visit.remote} visit {visit.visit_id[:8]}"},
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,  # type: ignore[arg-type]  # its bool result is not read
            download_manager=self._downloads,
        )
        started_s = time.time()
        recorder: asyncio.Task[None] | None = None
        try:
            try:
                await process.start(
                    *terminal_size(request.query.get("width"), request.query.get("height"))
                )
            except OSError as error:
                self.log.line(f"visit {visit.visit_id[:8]}: console not started: {error}")
                await websocket.close(message=f"console not started: {error.strerror}".encode())
                return websocket
            visit.pid = process.pid
            self.log.line(
                f"visit {visit.visit_id[:8]} from {visit.remote}: console pid {process.pid}"
            )
            self._audit("web.visit.start", remote=visit.remote, visit=visit.visit_id, pid=visit.pid)
            recorder = asyncio.create_task(self._record_tree(process, websocket))
            await self._relay(websocket, process)
        finally:
            if recorder is not None:
                recorder.cancel()
            self._sockets.discard(websocket)
            code = await process.stop()
            with contextlib.suppress(Exception):
                await websocket.close()
            ended_s = time.time()
            detail = f": {process.last_error(200)}" if code else ""
            self.log.line(
                f"visit {visit.visit_id[:8]} ended: console pid {visit.pid} exit {code}{detail}"
            )
            self._audit(
                "web.visit.end",
                remote=visit.remote,
                visit=visit.visit_id,
                pid=visit.pid,
                started=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started_s)),
                ended=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ended_s)),
                duration_s=round(ended_s - started_s, 3),
                exit_code=code,
                **({"error": process.last_error(200)} if code else {}),
            )
        return websocket

    @staticmethod
    async def _record_tree(process: VisitProcess, websocket: web.WebSocketResponse) -> None:
        """Record the console's tree while it runs; if it ends by itself, close the page."""
        while process.returncode is None:
            process.remember_tree()
            try:
                await asyncio.wait_for(process.output_ended(), TREE_RECORD_S)
            except TimeoutError:
                continue
            break
        deadline_s = time.monotonic() + TREE_RECORD_S
        while process.returncode is None and time.monotonic() < deadline_s:
            await asyncio.sleep(0.05)
        await websocket.close(message=_close_reason(process.returncode, process.last_error(200)))

    @staticmethod
    async def _relay(websocket: web.WebSocketResponse, process: VisitProcess) -> None:
        """The page's keys, sizes and focus to the console; garbage frames are ignored."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
                kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            if kind == "stdin" and isinstance(data, str):
                await process.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await process.set_terminal_size(
                    *terminal_size(data.get("width"), data.get("height"))
                )
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await process.blur()
            elif kind == "focus":
                await process.focus()
            if process.returncode is not None:
                break

    def _audit(self, event: str, **details: object) -> None:
        """A visit's record; an unwritable audit log is reported, never fatal to serving."""
        try:
            append_audit(event, self.settings.host_label, details, self.settings.audit_path)
        except OSError as error:
            self.log.line(f"audit log not written ({event}): {error}")


async def serve_until_stopped(server: ConsoleServer, announce: Sequence[str]) -> None:
    """Run until SIGINT/SIGTERM, then end every visit's console before returning."""
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await server.start()
    for line in announce:
        print(line.format(url=server.url, port=server.port), flush=True)
    try:
        await stop.wait()
    finally:
        server.log.line("stopping: ending every visitor's console")
        await server.close()
