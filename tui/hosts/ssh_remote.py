"""A command running on an SSH host: the line sent to sshd, the process group that ends it
whole, and the dialog written to and read line by line.

The line prints the command's process group id first (SSHHost reads and removes it), so
ending a command can `kill -- -PGID` where sshd's channel signal does not reach (root
logins skip privilege separation). A stream's command can also end with its session
(remote_command's `ends_with_channel`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import asyncssh

from tui.hosts.base import sh_command
from tui.hosts.ssh_connect import Connection

if TYPE_CHECKING:
    from tui.hosts.ssh import SSHHost


Process = asyncssh.SSHClientProcess[Any]

PGID_PREFIX = "servedeck-pgid:"
# Prints `servedeck-pgid:<id>` (the group sshd made for this session), then execs argv.
_PGID_SCRIPT = (
    f'g=; read -r _ _ _ _ g _ </proc/$$/stat 2>/dev/null; echo "{PGID_PREFIX}$g"; exec "$@"'
)


# A long-lived command may never write (`dmesg --follow` on a quiet kernel), so no broken
# pipe ends it when its connection goes: a watcher in its process group reads the
# channel's stdin, which servedeck never writes nor closes, and ends the group at
# end of input (the session closed, sshd killed, the console's terminal gone). The
# command itself reads /dev/null, as a stream's command did before.
_WATCHED_SCRIPT = (
    f'g=; read -r _ _ _ _ g _ </proc/$$/stat 2>/dev/null; echo "{PGID_PREFIX}$g"; '
    # fd 3: an asynchronous list's stdin is /dev/null unless it was duplicated before.
    "exec 3<&0; { while read -r _; do :; done; kill -TERM 0; } <&3 3<&- >/dev/null 2>&1 & "
    'exec "$@" </dev/null 3<&-'
)


def remote_command(argv: Sequence[str], ends_with_channel: bool = False) -> str:
    """The string sent to sshd: argv under /bin/sh, after the process group line.

    `ends_with_channel`: the command's process group ends when the session's stdin
    reaches end of input (a stream that must not outlive its connection).
    """
    script = _WATCHED_SCRIPT if ends_with_channel else _PGID_SCRIPT
    return sh_command(["/bin/sh", "-c", script, "sh", *argv])


@dataclass(slots=True, eq=False)
class Remote:
    """A running remote command and the process group that ends it whole."""

    process: Process
    connection: Connection
    pgid: str | None = None


class SSHDialog:
    """A running remote command written to and read line by line (SSHHost.dialog)."""

    def __init__(self, host: SSHHost, remote: Remote, argv: tuple[str, ...]) -> None:
        self._host = host
        self._remote = remote
        self._argv = argv

    @property
    def running(self) -> bool:
        """False once the command ended or its connection closed: open a new dialog."""
        remote = self._remote
        return remote.process.returncode is None and not remote.connection.is_closed()

    @property
    def ended_by_itself(self) -> bool:
        """The command ended while its connection stayed up (killed or exited on the box)."""
        remote = self._remote
        return remote.process.returncode is not None and not remote.connection.is_closed()

    async def send(self, text: str) -> None:
        """Write text to the command's stdin; a lost connection raises HostError.

        A command that already ended takes nothing; the next readline() says so (None).
        """
        try:
            self._remote.process.stdin.write(text)
        except (OSError, asyncssh.Error):
            if self._remote.connection.is_closed():
                raise await self._host._lost_while_running(self._remote, self._argv) from None

    async def readline(self) -> str | None:
        """The next stdout line without its newline; None once the command ended."""
        try:
            line = await self._remote.process.stdout.readline()
        except (OSError, asyncssh.Error):
            if not self._remote.connection.is_closed():
                return None  # the command's channel ended, the connection did not
            raise await self._host._lost_while_running(self._remote, self._argv) from None
        if line:
            return str(line).rstrip("\r\n")
        if self._remote.connection.is_closed():
            raise await self._host._lost_while_running(self._remote, self._argv)
        return None

    async def close(self, eof_grace_s: float = 1.0) -> None:
        """End the remote command (its whole process group) and its session.

        First its stdin is closed: a command that ends at end of input (a `read` loop)
        exits by itself, with no second session to send the kill (a login per host
        when a fleet closes). One that lingers is ended as a stream is.
        """
        self._host._streams.discard(self._remote)
        process = self._remote.process
        if self.running:
            with contextlib.suppress(OSError, asyncssh.Error):
                process.stdin.write_eof()
            with contextlib.suppress(TimeoutError, OSError, asyncssh.Error):
                await asyncio.wait_for(process.wait_closed(), eof_grace_s)
        if process.returncode is not None:
            process.close()
            return
        await self._host._end(self._remote)
