"""Running the process helper on a host: in-process here, one long-lived helper per SSH host.

The same helper code (tui/procs/helper.py) answers every request, so local and remote
hosts share one classification. What differs is how a request reaches it:

- this machine (a LocalHost): `helper.answer_to` in a worker thread of the console, with
  the helper's identity cache on. No interpreter is started per refresh.
- a host with `dialog` (SSHHost): the helper's source goes once to a long-lived
  `python3 -c BOOTSTRAP`; each request is one line on its stdin, each answer one line on
  its stdout. It is started again when it dies, ends by itself after
  helper.SERVE_MAX_REQUESTS (bounded memory), and a request that times out ends it.
- any other host, or an explicit interpreter: `python3 - REQUEST` with the source on
  stdin, one process per request. Never an inline quoted one-liner (docs/DESIGN.md section 7).
"""

from __future__ import annotations

import asyncio
import json
import weakref
from functools import cache
from importlib import resources
from typing import Any, Protocol

from tui.core.errors import CommandTimeout, HostError
from tui.hosts.base import Host
from tui.procs import helper

HELPER_MODULE = "helper.py"
DEFAULT_PYTHON = "python3"

# Read on the host by `python3 -c`: the source's length in characters on the first line,
# the source itself, then helper.serve() answers request lines until end of input.
BOOTSTRAP = (
    "import sys; n = int(sys.stdin.readline()); source = sys.stdin.read(n); "
    "g = {'__name__': 'servedeck_helper'}; exec(compile(source, 'servedeck-helper', 'exec'), g); "
    "g['serve'](sys.stdin, sys.stdout)"
)


@cache
def helper_source() -> str:
    """The helper's exact source text, read from the installed package."""
    return resources.files("tui.procs").joinpath(HELPER_MODULE).read_text(encoding="utf-8")


class _Dialog(Protocol):
    @property
    def running(self) -> bool: ...

    async def send(self, text: str) -> None: ...

    async def readline(self) -> str | None: ...

    async def close(self, eof_grace_s: float = 1.0) -> None: ...


class HelperSession:
    """One long-lived helper on one host: requests go one at a time, in order."""

    def __init__(self, host: Host) -> None:
        self._host = host
        self._dialog: _Dialog | None = None
        self._lock = asyncio.Lock()
        self.started = 0  # helpers started on the host, for tests and the breakdown

    async def _open(self) -> _Dialog:
        dialog: _Dialog = await self._host.dialog([DEFAULT_PYTHON, "-c", BOOTSTRAP])  # type: ignore[attr-defined]
        self.started += 1
        source = helper_source()
        await dialog.send(f"{len(source)}\n{source}")
        return dialog

    async def _exchange(self, request: dict[str, Any]) -> str | None:
        if self._dialog is None or not self._dialog.running:
            self._dialog = await self._open()
        await self._dialog.send(json.dumps(request) + "\n")
        return await self._dialog.readline()

    @property
    def busy(self) -> bool:
        """A request is in flight (on a slow or cut connection it may wait out its timeout)."""
        return self._lock.locked()

    async def ask(self, request: dict[str, Any], timeout_s: float) -> str | None:
        """The answer line, or None when the helper ended without one (it is restarted
        next time). A timeout ends the helper: a late answer must not meet the next ask."""
        async with self._lock:
            try:
                line = await asyncio.wait_for(self._exchange(request), timeout_s)
            except TimeoutError:
                await self.close()
                raise CommandTimeout(
                    self._host.label, f"process helper gave no answer in {timeout_s:.0f} s"
                ) from None
            except HostError:
                await self.close()
                raise
            if line is None:
                await self.close()
            return line

    async def close(self) -> None:
        dialog, self._dialog = self._dialog, None
        if dialog is not None:
            await dialog.close()


_SESSIONS: weakref.WeakKeyDictionary[Any, HelperSession] = weakref.WeakKeyDictionary()


def helper_session(host: Host) -> HelperSession | None:
    """The host's long-lived helper, or None where the host cannot hold one."""
    if host.is_local or not callable(getattr(host, "dialog", None)):
        return None
    session = _SESSIONS.get(host)
    if session is None:
        session = _SESSIONS[host] = HelperSession(host)
    return session


async def _in_process(request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    helper.enable_cache()
    # The console's own thread pool: a /proc walk of a few ms never holds the event loop.
    return await asyncio.wait_for(asyncio.to_thread(helper.answer_to, request), timeout_s)


async def _one_shot(
    host: Host, request: dict[str, Any], timeout_s: float, python: str
) -> dict[str, Any]:
    result = await host.run(
        [python, "-", json.dumps(request)], timeout_s=timeout_s, stdin_text=helper_source()
    )
    last_line = result.stdout.strip().splitlines()[-1:] or [""]
    try:
        answer = json.loads(last_line[0])
    except ValueError:
        stderr = result.stderr.strip().splitlines()
        why = stderr[-1] if stderr else f"exit status {result.exit_status}, no JSON answer"
        if result.exit_status == 127:
            why = f"{python} not found (the process helper needs Python 3 on the host)"
        raise HostError(host.label, f"process helper failed: {why}") from None
    if not isinstance(answer, dict):
        raise HostError(host.label, "process helper failed: malformed answer")
    return answer


async def run_helper(
    host: Host, request: dict[str, Any], timeout_s: float = 30.0, python: str = DEFAULT_PYTHON
) -> dict[str, Any]:
    """Send one request to the host's helper; return its answer or raise a one-line HostError."""
    session = helper_session(host) if python == DEFAULT_PYTHON else None
    if session is not None and session.busy:
        # Another request holds the helper (a refresh on a slow link): this one, often what
        # the operator asked for (the kill dialog's listing), does not queue behind it.
        session = None
    if host.is_local and python == DEFAULT_PYTHON and getattr(host, "helper_in_process", True):
        answer = await _in_process(request, timeout_s)
    elif session is not None:
        line = await session.ask(request, timeout_s)
        if line is None and request.get("op") == "list":
            line = await session.ask(request, timeout_s)  # a helper that just ended: once more
        if line is None:
            # No answer and no stderr (a dialog's stderr is dropped): a one-shot run says why
            # (python3 missing, a broken interpreter). Never repeated for a kill.
            if request.get("op") != "list":
                raise HostError(host.label, "process helper ended without an answer")
            answer = await _one_shot(host, request, timeout_s, python)
        else:
            try:
                answer = json.loads(line)
            except ValueError:
                await session.close()
                raise HostError(host.label, "process helper failed: malformed answer") from None
    else:
        answer = await _one_shot(host, request, timeout_s, python)
    if not isinstance(answer, dict) or not answer.get("ok"):
        error = answer.get("error") if isinstance(answer, dict) else "malformed answer"
        raise HostError(host.label, f"process helper failed: {error}")
    return answer
