"""One visitor's console process, driven through textual-serve's AppService.

textual-serve runs the command through a shell and waits without a limit for it to
quit; a served console must instead end for certain when its tab closes, together
with everything it started. So: argv without a shell, a session of its own, output
drained even after the page went away (a full pipe would block the console's exit),
and quit -> SIGTERM -> SIGKILL of the whole recorded tree, each after a grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
import time
from asyncio.subprocess import PIPE, Process
from collections.abc import Awaitable, Callable, Mapping, Sequence

from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from tui.core.redact import redact_text
from tui.web import proctree

# Quitting the demo stops its simulated service and workers first: a few seconds.
QUIT_GRACE_S = 20.0
TERM_GRACE_S = 5.0
# What the console started ends with it (the simulator's server watches its parent).
TREE_GRACE_S = 5.0


class _StderrTail:
    """The console's stderr as textual-serve reads it, keeping the last bytes for the page."""

    def __init__(self, reader: asyncio.StreamReader, keep_bytes: int = 4096) -> None:
        self._reader = reader
        self._keep_bytes = keep_bytes
        self.tail = bytearray()

    async def read(self, size: int = -1) -> bytes:
        data = await self._reader.read(size)
        self.tail += data
        del self.tail[: -self._keep_bytes]
        return data


class VisitProcess(AppService):
    """A console process under Textual's web driver, bytes relayed to one websocket."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        write_bytes: Callable[[bytes], Awaitable[None]],
        write_str: Callable[[str], Awaitable[None]],
        close: Callable[[], Awaitable[None]],
        download_manager: DownloadManager,
    ) -> None:
        super().__init__(
            shlex.join(argv),
            write_bytes=write_bytes,
            write_str=write_str,
            close=close,
            download_manager=download_manager,
        )
        self.argv = list(argv)
        self._extra_env = dict(env)
        self._page_gone = False
        self.tree: list[proctree.ProcessId] = []

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.returncode

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width, height)
        environment.update(self._extra_env)
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            env=self._build_environment(width, height),
            start_new_session=True,
        )
        assert process.stdin is not None and process.stderr is not None
        self._stdin = process.stdin
        self._stderr_tail = _StderrTail(process.stderr)
        process.stderr = self._stderr_tail  # type: ignore[assignment]
        return process

    def last_error(self, limit: int = 100) -> str:
        """The console's last stderr line (secrets redacted), to tell the visitor why it ended."""
        tail = getattr(self, "_stderr_tail", None)
        lines = bytes(tail.tail).decode(errors="replace").splitlines() if tail else []
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        last = redact_text(last)
        return last if len(last) <= limit else last[: limit - 1] + "…"

    async def on_data(self, payload: bytes) -> None:
        """Relay to the page; once it is gone keep reading (and dropping) the output."""
        if self._page_gone:
            return
        try:
            await self.remote_write_bytes(payload)
        except (ConnectionError, RuntimeError):
            self._page_gone = True

    async def on_meta(self, data: bytes) -> None:
        if self._page_gone:
            return
        try:
            await super().on_meta(data)
        except (ConnectionError, RuntimeError):
            self._page_gone = True

    async def output_ended(self) -> None:
        """Until the console's output ends (it quit, crashed or was ended)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def remember_tree(self) -> None:
        """Record what the console has started so far (called while it lives)."""
        pid = self.pid
        if pid is None or self.returncode is not None:
            return
        known = set(self.tree)
        for process in [proctree.identity(pid), *proctree.descendants(pid)]:
            if process is not None and process not in known:
                self.tree.append(process)
                known.add(process)

    async def stop(self) -> int | None:  # type: ignore[override]  # textual-serve ignores it
        """End the console and everything it started; returns its exit status."""
        process = self._process
        if process is None:
            return None
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        self.remember_tree()
        if process.returncode is None:
            await self.send_meta({"type": "quit"})  # the console's own, orderly quit
            if not await self._ended(process, QUIT_GRACE_S):
                proctree.signal_all(self.tree[:1], signal.SIGTERM)
                if not await self._ended(process, TERM_GRACE_S):
                    proctree.signal_all(self.tree, signal.SIGKILL)
                    await self._ended(process, TERM_GRACE_S)
        await self._end_leftovers()
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), TERM_GRACE_S)
            if not self._task.done():
                self._task.cancel()
            self._task = None
        return process.returncode

    async def _end_leftovers(self) -> None:
        """Anything of the recorded tree still running after the console ended: end it."""
        deadline_s = time.monotonic() + TREE_GRACE_S
        while time.monotonic() < deadline_s and any(map(proctree.is_running, self.tree)):
            await asyncio.sleep(0.1)
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if not proctree.signal_all(self.tree, signum):
                return
            await asyncio.sleep(1.0)

    @staticmethod
    async def _ended(process: Process, timeout_s: float) -> bool:
        """By exit status, not by `wait()`: that also waits for pipes a grandchild may hold."""
        deadline_s = time.monotonic() + timeout_s
        while process.returncode is None and time.monotonic() < deadline_s:
            await asyncio.sleep(0.05)
        return process.returncode is not None
