"""Periodic reads through one long-lived remote shell per connection, not a session per read.

Starting an SSH session costs the box a login (sshd forks, the login shell reads its
startup files) and the console a channel: a unit read every 10 s, the GPU processes every
2 s and the vitals every 30 s were ~50 channels a minute on an idle console. A host that
can hold a dialog (SSHHost) keeps one `sh` (READER_SCRIPT) answering each request instead:
the command's text, then the marker line; the answer is a begin line, the command's
stdout, a status line, its stderr and an end line, all framed by a per-reader random
marker so no output can end an answer early. The command is exec'd with stdin /dev/null
in a subshell, as Host.run runs it; the reader stays as it was. A carriage return ending
a line is dropped (the dialog reads lines): these reads are of text that has none.

The reader is opened again on the next read after it died (killed on the box, the
connection cut: the host's reconnect backoff applies); a read past its timeout ends it
(a half-read answer must not meet the next read), as does an answer that is not framed
(one line naming the host, never a traceback). Memory is bounded on both ends: the shell
keeps only the running command's stderr, and an answer over MAX_ANSWER_CHARS ends it.
A reader answers one read at a time; a host has two (ReaderPool), the second for reads
that would wait long behind a slow one, so their number stays bounded too.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
import time
import weakref
from collections.abc import Sequence
from typing import Any, Protocol

from tui.core.errors import CommandTimeout, HostError
from tui.core.redact import redact_text
from tui.hosts.base import CommandResult, Host

MAX_ANSWER_CHARS = 8 * 1024 * 1024
START_TIMEOUT_S = 30.0
POOL_SIZE = 2
PATIENCE_S = 2.0  # a read waits this long for the first reader, then takes the second

# $1: the marker. A request is lines of shell text ended by a line that is the marker.
# dash-compatible; builtins only, except the subshell each command runs in.
READER_SCRIPT = r"""m=$1
while IFS= read -r line; do
  cmd=
  while [ "$line" != "$m" ]; do
    cmd="$cmd$line
"
    IFS= read -r line || exit 0
  done
  printf '%sbegin\n' "$m"
  { err=$( { eval "$cmd"; } </dev/null 2>&1 >&3 3>&- ); st=$?; } 3>&1
  printf '\n%sstatus:%s\n%s\n%send\n' "$m" "$st" "$err" "$m"
done
"""


class _Dialog(Protocol):
    @property
    def running(self) -> bool: ...

    async def send(self, text: str) -> None: ...

    async def readline(self) -> str | None: ...

    async def close(self, eof_grace_s: float = 1.0) -> None: ...


class ReaderBusy(CommandTimeout):
    """Another read held the reader for the whole wait."""


class _Ended(Exception):
    """The reader ended before it answered (killed on the box, or it exited)."""


class RemoteReader:
    """One host's long-lived `sh` answering read commands one at a time."""

    def __init__(self, host: Host, max_answer_chars: int = MAX_ANSWER_CHARS) -> None:
        self._host = host
        self.max_answer_chars = max_answer_chars
        self._dialog: _Dialog | None = None
        self._marker = ""
        self._lock = asyncio.Lock()
        self.starts = 0  # readers opened on the host: one per connection unless one died

    async def _open(self) -> _Dialog:
        self._marker = f"servedeck-read-{secrets.token_hex(8)}:"
        argv = ["/bin/sh", "-c", READER_SCRIPT, "sh", self._marker]
        dialog: _Dialog = await self._host.dialog(argv, start_timeout_s=START_TIMEOUT_S)  # type: ignore[attr-defined]
        self.starts += 1
        return dialog

    async def close(self) -> None:
        """End the reader (its process group); the next read opens another."""
        dialog, self._dialog = self._dialog, None
        if dialog is not None:
            with contextlib.suppress(HostError, OSError):
                await dialog.close()

    async def run(
        self, argv: Sequence[str], timeout_s: float = 30.0, wait_s: float | None = None
    ) -> CommandResult:
        """Run argv to completion in the reader, as Host.run would (stdin is /dev/null).

        Waits up to wait_s (default: timeout_s) for a read in progress, then raises
        ReaderBusy. Raises CommandTimeout when the command runs past timeout_s (the reader
        is ended), HostError for a lost connection or an answer that is not the reader's.
        """
        if not argv:
            raise HostError(self._host.label, "empty command")
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout_s if wait_s is None else wait_s):
                await self._lock.acquire()
        except TimeoutError:
            raise ReaderBusy(
                self._host.label,
                f"{argv[0]}: the remote reader was busy for {wait_s or timeout_s:g} s",
            ) from None
        try:
            async with asyncio.timeout(timeout_s):
                # exec: the same process, exit status and "not found" line as Host.run
                command = f"exec {shlex.join(argv)}"
                status, stdout, stderr = await self._answer(command, argv[0])
        except TimeoutError:
            raise CommandTimeout(
                self._host.label, f"{argv[0]} ran past {timeout_s:g} s and was ended"
            ) from None
        finally:
            self._lock.release()
        return CommandResult(tuple(argv), status, stdout, stderr, time.monotonic() - started)

    async def _answer(self, command: str, name: str) -> tuple[int, str, str]:
        """The answer from the running reader, or from a new one if it had died since."""
        try:
            fresh = self._dialog is None or not self._dialog.running
            try:
                return await self._exchange(command, name)
            except _Ended:
                await self.close()
                if fresh:
                    raise HostError(
                        self._host.label, f"{name}: the remote reader ended without an answer"
                    ) from None
            return await self._exchange(command, name)  # a reader that died while idle: once more
        except _Ended:
            await self.close()
            raise HostError(
                self._host.label, f"{name}: the remote reader ended without an answer"
            ) from None
        except BaseException:  # a timeout, a cancel, a lost connection, garbage: start over
            await self.close()
            raise

    async def _exchange(self, command: str, name: str) -> tuple[int, str, str]:
        if self._dialog is None or not self._dialog.running:
            await self.close()
            self._dialog = await self._open()
        dialog, marker = self._dialog, self._marker
        await dialog.send(f"{command}\n{marker}\n")
        first = await dialog.readline()
        if first is None:
            raise _Ended
        if first != f"{marker}begin":
            raise self._garbage(name, first)
        stdout: list[str] = []
        stderr: list[str] | None = None
        size = 0
        status = -1
        while (line := await dialog.readline()) is not None:
            size += len(line) + 1
            if size > self.max_answer_chars:
                raise HostError(
                    self._host.label,
                    f"{name}: answer over {self.max_answer_chars} characters, reader ended",
                )
            if line == f"{marker}end" and stderr is not None:
                return status, "\n".join(stdout), "\n".join(stderr)
            if stderr is not None:
                stderr.append(line)
            elif line.startswith(f"{marker}status:"):
                code = line.removeprefix(f"{marker}status:")
                if not code.isdigit():
                    raise self._garbage(name, line)
                status, stderr = int(code), []
            elif line.startswith(marker):
                raise self._garbage(name, line)
            else:
                stdout.append(line)
        raise _Ended

    def _garbage(self, name: str, line: str) -> HostError:
        shown = redact_text(line.replace(self._marker, "<marker>"))[:80]
        return HostError(
            self._host.label, f"{name}: the remote reader answered garbage ({shown!r})"
        )


class ReaderPool:
    """A host's readers: the first answers every read unless one holds it past
    `patience_s` (a hung `nvidia-smi`), then the second does, so a slow read delays
    the others by at most patience_s. Idle, only the first is ever opened."""

    def __init__(self, host: Host, size: int = POOL_SIZE, patience_s: float = PATIENCE_S) -> None:
        self.readers = tuple(RemoteReader(host) for _ in range(size))
        self.patience_s = patience_s

    @property
    def starts(self) -> int:
        """Readers opened on the host, all of the pool's together."""
        return sum(reader.starts for reader in self.readers)

    async def run(self, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
        *first, last = self.readers
        for reader in first:
            with contextlib.suppress(ReaderBusy):
                return await reader.run(argv, timeout_s, wait_s=min(self.patience_s, timeout_s))
        return await last.run(argv, timeout_s)

    async def close(self) -> None:
        for reader in self.readers:
            await reader.close()


_POOLS: weakref.WeakKeyDictionary[Any, ReaderPool] = weakref.WeakKeyDictionary()


def reader_pool(host: Host) -> ReaderPool | None:
    """The host's long-lived readers, or None where each read is a command of its own
    (this machine: a process is what a read costs; a host that holds no dialog)."""
    if host.is_local or not callable(getattr(host, "dialog", None)):
        return None
    pool = _POOLS.get(host)
    if pool is None:
        pool = _POOLS[host] = ReaderPool(host)
    return pool


async def run_read(host: Host, argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
    """A periodic read's command: through the host's readers where it has them, else Host.run."""
    pool = reader_pool(host)
    if pool is None:
        return await host.run(argv, timeout_s=timeout_s)
    return await pool.run(argv, timeout_s)
