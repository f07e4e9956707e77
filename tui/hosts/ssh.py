"""SSHHost: commands on a remote machine over one shared asyncssh connection.

Every caller shares one connection (through the profile's jump chain), opened
on first use. Short commands wait on a semaphore so that no more than
`max_sessions` channels are open at once (sshd refuses past its MaxSessions).
Every command runs as `/bin/sh -c '<shlex-joined argv>'`, so the login shell
(bash, zsh, fish) only ever sees one safely quoted string.

Ending a command: sshd delivers a channel signal to the command's process
group, but only for sessions under privilege separation, which sshd skips for
root logins ("session signalling requires privilege separation"). So each
command first prints its process group id (a line servedeck removes), and
ending it sends the channel signal and also `kill -- -PGID` in a second
session. Nothing is left running on the server either way. A stream's command
also ends when its connection goes without a word (cut, sshd killed, the console's
terminal closed), written to or not: see remote_command (tui/hosts/ssh_remote.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import asyncssh

from tui.core.config import HostConfig
from tui.core.errors import CommandTimeout, HostError, HostKeyError, HostUnreachable
from tui.hosts.base import CommandResult, sh_command
from tui.hosts.ssh_connect import Connection, close_all, connect_chain, describe_error
from tui.hosts.ssh_remote import PGID_PREFIX, Process, Remote, SSHDialog, remote_command

_BACKOFF_FIRST_S = 0.5
# Capped low: a failed attempt is one TCP connect, and the console must resume within
# a few seconds of the host coming back (an outage of hours still costs one try per 1.5-3 s).
_BACKOFF_MAX_S = 3.0
_END_GRACE_S = 3.0
_READ_FILE_TIMEOUT_S = 120.0


class SSHHost:
    """A remote machine reached over SSH, possibly through jump hosts."""

    is_local = False

    def __init__(self, config: HostConfig, trust_args: str = "--profile PROFILE") -> None:
        """`trust_args` name the host to `servedeck hosts trust` in messages (factory.trust_args)."""
        self.config = config
        # The route, jump chain included: a box behind a jump host is named unambiguously
        # in listings, kill reports and the audit log (the same text as Deck.host_label).
        self.label = config.route
        self._route = config.route
        self._trust_args = trust_args
        self._chain: list[Connection] = []
        self._connect_lock = asyncio.Lock()
        self._sessions = asyncio.Semaphore(config.max_sessions)
        self._streams: set[Remote] = set()
        self._failures = 0
        self._next_attempt_at = 0.0
        self.connects = 0  # successful (re)connections: a recorder notes each reconnect
        self._last_failure = ""
        self._unreachable_since_s: float | None = None  # wall time of the first failed connect
        # Connections found dead (cut, host down): the console shows each loss even when
        # a reconnect follows before it looks.
        self.connection_losses = 0
        self._forwards: dict[tuple[str, int], tuple[Connection, asyncssh.SSHListener]] = {}

    # -- the connection ---------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return bool(self._chain) and not self._chain[-1].is_closed()

    def reconnect_in_s(self) -> float | None:
        """Seconds until the next connection attempt is allowed; None while connected."""
        if self.connected:
            return None
        return max(0.0, self._next_attempt_at - time.monotonic())

    async def _connection(self) -> Connection:
        """The shared connection, (re)opened when needed; failures back off exponentially.

        During a backoff a caller fails at once instead of waiting, so a poller
        that calls every second does not hammer an unreachable server.
        """
        async with self._connect_lock:
            if self.connected:
                return self._chain[-1]
            await self._forget_chain()
            wait_s = self._next_attempt_at - time.monotonic()
            if wait_s > 0:
                raise HostUnreachable(
                    self._route, f"{self._unreachable()}; next attempt in {wait_s:.1f} s"
                )
            try:
                self._chain = await connect_chain(self.config, self._trust_args)
            except HostError as error:
                self._last_failure = str(error).removeprefix(f"{self._route}: ")
                if self._unreachable_since_s is None:
                    self._unreachable_since_s = time.time()
                self._failures += 1
                delay_s = min(_BACKOFF_MAX_S, _BACKOFF_FIRST_S * 2 ** (self._failures - 1))
                self._next_attempt_at = time.monotonic() + delay_s * random.uniform(0.5, 1.0)
                if isinstance(error, HostKeyError):
                    raise  # refused, with the way to accept the key: its own one line
                raise HostUnreachable(self._route, self._unreachable()) from None
            self._unreachable_since_s = None
            self._failures = 0
            self._next_attempt_at = 0.0
            self.connects += 1
            return self._chain[-1]

    def _unreachable(self) -> str:
        """Why and since when the host is not reached: never a guess at what it has."""
        since_s = self._unreachable_since_s or time.time()
        stamp = time.strftime("%H:%M:%S", time.localtime(since_s))
        return f"host unreachable since {stamp}: {self._last_failure}"

    async def _forget_chain(self) -> None:
        chain, self._chain = self._chain, []
        if chain and chain[-1].is_closed():
            self.connection_losses += 1
        await close_all(chain)

    async def _drop(self, connection: Connection) -> None:
        """Forget a connection that failed so the next call reconnects."""
        async with self._connect_lock:
            if self._chain and self._chain[-1] is connection:
                await self._forget_chain()

    # -- starting and ending commands ---------------------------------------------------

    async def _start(
        self,
        argv: Sequence[str],
        stdin_text: str | None,
        encoding: str | None,
        stderr: Any = asyncssh.PIPE,
        keep_stdin: bool = False,
        start_timeout_s: float | None = None,
        ends_with_channel: bool = False,
    ) -> Remote:
        """Open a session running argv; read its process group line.

        `ends_with_channel` keeps stdin open, unwritten, for the watcher that ends the
        command when the session goes (remote_command).

        When the connection turns out to be dead before the command started, it
        reconnects and tries once more: nothing ran, so nothing runs twice.
        """
        if not argv:
            raise HostError(self._route, "empty command")
        stdin: dict[str, Any] = (
            {"input": stdin_text} if stdin_text is not None else {"stdin": asyncssh.DEVNULL}
        )
        if keep_stdin or ends_with_channel:  # a dialog's lines, or the watcher's end of input
            stdin = {}
        for attempt in range(2):
            connection = await self._connection()
            try:
                process = await connection.create_process(
                    remote_command(argv, ends_with_channel),
                    encoding=encoding,
                    errors="replace",
                    stderr=stderr,
                    **stdin,
                )
                break
            except (OSError, asyncssh.Error) as error:
                lost = connection.is_closed() or isinstance(error, asyncssh.DisconnectError)
                if lost:
                    await self._drop(connection)
                    if attempt == 0:
                        continue
                message = describe_error(error, self.config.connect_timeout_s)
                raise HostError(self._route, f"{argv[0]}: {message}") from None
        remote = Remote(process, connection)
        start_timeout_s = start_timeout_s or self.config.connect_timeout_s
        try:
            remote.pgid = await asyncio.wait_for(self._read_pgid(process), start_timeout_s)
        except TimeoutError:  # the connection is up but slow to start a session (busy box)
            await self._end(remote)
            raise CommandTimeout(
                self._route,
                f"{argv[0]}: the command did not start within {start_timeout_s:g} s",
            ) from None
        except (OSError, asyncssh.Error):
            await self._end(remote)
            raise HostError(self._route, f"{argv[0]}: the command did not start") from None
        except asyncio.CancelledError:
            await self._end(remote)
            raise
        return remote

    @staticmethod
    async def _read_pgid(process: Process) -> str | None:
        """Skip to the process group line; lines before it come from shell startup files."""
        while True:
            raw = await process.stdout.readline()
            if not raw:
                return None
            line = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            if line.startswith(PGID_PREFIX):
                pgid = line[len(PGID_PREFIX) :].strip()
                return pgid if pgid.isdigit() and int(pgid) > 1 else None

    async def _end(self, remote: Remote, grace_s: float = _END_GRACE_S) -> None:
        """SIGTERM the remote process group, SIGKILL it if it lingers, close the channel."""
        process, connection = remote.process, remote.connection
        for signal_name in ("TERM", "KILL"):
            if process.returncode is not None or connection.is_closed():
                break
            with contextlib.suppress(OSError, asyncssh.Error):
                process.send_signal(signal_name)
            if remote.pgid:
                kill = sh_command(["kill", f"-{signal_name}", f"-{remote.pgid}"])  # dash: no "--"
                with contextlib.suppress(TimeoutError, OSError, asyncssh.Error):
                    await asyncio.wait_for(connection.run(kill, check=False), grace_s)
            try:
                await asyncio.wait_for(process.wait_closed(), grace_s)
                break
            except TimeoutError:
                continue
        process.close()
        with contextlib.suppress(TimeoutError, OSError, asyncssh.Error):
            await asyncio.wait_for(process.wait_closed(), grace_s)

    async def _lost_while_running(self, remote: Remote, argv: Sequence[str]) -> HostError:
        await self._drop(remote.connection)
        return HostError(self._route, f"{argv[0]}: connection lost before the command finished")

    async def _communicate(
        self,
        argv: Sequence[str],
        timeout_s: float,
        stdin_text: str | None,
        encoding: str | None,
    ) -> tuple[Process, Any, Any]:
        """Run argv to the end under the session semaphore; returns its output."""
        async with self._sessions:
            started = time.monotonic()
            remote = await self._start(argv, stdin_text, encoding)
            process = remote.process
            left_s = max(0.0, timeout_s - (time.monotonic() - started))
            try:
                stdout, stderr = await asyncio.wait_for(process.communicate(), left_s)
            except TimeoutError:
                await self._end(remote)
                raise CommandTimeout(
                    self._route, f"{argv[0]} ran past {timeout_s:g} s and was ended"
                ) from None
            except asyncio.CancelledError:
                await self._end(remote)
                raise
            except (OSError, asyncssh.Error):
                raise await self._lost_while_running(remote, argv) from None
            if process.returncode is None:
                raise await self._lost_while_running(remote, argv)
            return process, stdout, stderr

    # -- the Host protocol -------------------------------------------------------------

    async def run(
        self,
        argv: Sequence[str],
        timeout_s: float = 30.0,
        stdin_text: str | None = None,
    ) -> CommandResult:
        started = time.monotonic()
        process, stdout, stderr = await self._communicate(argv, timeout_s, stdin_text, "utf-8")
        return CommandResult(
            argv=tuple(argv),
            exit_status=process.returncode if process.returncode is not None else -1,
            stdout=stdout or "",
            stderr=stderr or "",
            duration_s=time.monotonic() - started,
        )

    async def stream(
        self, argv: Sequence[str], stdin_text: str | None = None
    ) -> AsyncIterator[str]:
        """Yield stdout lines; closing or cancelling the generator ends the remote process.

        stderr is discarded (unread, it would stall the channel). Streams do not
        take a slot of the short-command semaphore (they live long), so keep
        max_sessions a few below sshd's MaxSessions. A lost connection ends the
        stream with HostError; call stream() again to resume. Without stdin_text, a
        cut connection also ends the command on the box, written to or not.
        """
        remote = await self._start(
            argv,
            stdin_text,
            "utf-8",
            stderr=asyncssh.DEVNULL,
            ends_with_channel=stdin_text is None,
        )
        process = remote.process
        self._streams.add(remote)
        try:
            try:
                # Not `async for`: asyncssh's iterator can yield a final "" at EOF.
                while line := await process.stdout.readline():
                    yield line.rstrip("\r\n")
                await process.wait_closed()
            except (OSError, asyncssh.Error):
                raise await self._lost_while_running(remote, argv) from None
            if process.returncode is None:
                raise await self._lost_while_running(remote, argv)
        finally:
            self._streams.discard(remote)
            await self._end(remote)

    async def dialog(self, argv: Sequence[str], start_timeout_s: float | None = None) -> SSHDialog:
        """A long-lived command fed lines on stdin: many exchanges for one session start.

        Starting a session costs the box a login (sshd fork, shell, startup files); a
        poller that asks every few seconds keeps one dialog open instead. Like a stream,
        it takes no slot of the short-command semaphore and ends with close().
        `start_timeout_s` (default: the connect timeout) bounds the login: a long-lived
        session may wait longer for it than a short command, rather than give up a
        login a busy box has almost finished and start another.
        """
        remote = await self._start(
            argv,
            None,
            "utf-8",
            stderr=asyncssh.DEVNULL,
            keep_stdin=True,
            start_timeout_s=start_timeout_s,
        )
        self._streams.add(remote)
        return SSHDialog(self, remote, tuple(argv))

    async def read_file(self, path: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        """The first max_bytes of a remote file, read with `head -c` (no SFTP subsystem needed)."""
        argv = ["head", "-c", str(max_bytes), "--", path]
        process, stdout, stderr = await self._communicate(argv, _READ_FILE_TIMEOUT_S, None, None)
        if process.returncode != 0:
            lines = bytes(stderr or b"").decode(errors="replace").strip().splitlines()
            reason = lines[-1] if lines else f"exit status {process.returncode}"
            raise HostError(self._route, f"cannot read {path}: {reason}")
        return bytes(stdout or b"")

    async def forward_local_port(self, remote_host: str, remote_port: int) -> int:
        """A port on this machine's loopback tunnelled to remote_host:remote_port on the box.

        vLLM usually listens on the box's loopback only; HTTP sources (metrics, readiness,
        benchmarks) reach it through this forward, re-created after a reconnect.
        """
        connection = await self._connection()
        known = self._forwards.get((remote_host, remote_port))
        if known is not None and known[0] is connection:
            return known[1].get_port()
        try:
            listener = await connection.forward_local_port("127.0.0.1", 0, remote_host, remote_port)
        except (OSError, asyncssh.Error) as error:
            raise HostError(
                self._route, f"cannot forward a port to {remote_host}:{remote_port}: {error}"
            ) from None
        if known is not None:
            known[1].close()
        self._forwards[(remote_host, remote_port)] = (connection, listener)
        return listener.get_port()

    async def close(self) -> None:
        for _, listener in self._forwards.values():
            listener.close()
        self._forwards.clear()
        for remote in list(self._streams):
            await self._end(remote)
        self._streams.clear()
        async with self._connect_lock:
            await self._forget_chain()
