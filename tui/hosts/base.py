"""The one interface every source uses to reach a machine, local or remote."""

from __future__ import annotations

import shlex
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# What Host.stream yields in place of a line over its size limit: the line's bytes are
# dropped (never buffered whole), and the consumer can count and report the gap.
OVERLONG_LINE = "\x00servedeck: line over the stream limit skipped\x00"


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a finished command left behind."""

    argv: tuple[str, ...]
    exit_status: int
    stdout: str
    stderr: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


@runtime_checkable
class Host(Protocol):
    """A machine servedeck can run commands on.

    Commands are argv lists, never shell strings: remote hosts join them with
    `shlex.join` and run them under `/bin/sh`, so the login shell changes nothing.
    """

    label: str
    is_local: bool

    async def run(
        self,
        argv: Sequence[str],
        timeout_s: float = 30.0,
        stdin_text: str | None = None,
    ) -> CommandResult:
        """Run argv to completion; a timeout ends the process and raises CommandTimeout."""
        ...

    def stream(self, argv: Sequence[str], stdin_text: str | None = None) -> AsyncIterator[str]:
        """Yield stdout lines (without newline); closing or cancelling ends the process."""
        ...

    async def read_file(self, path: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        """Read a file, at most max_bytes of it."""
        ...

    async def close(self) -> None:
        """Release connections and end every stream still running."""
        ...


def sh_command(argv: Sequence[str]) -> str:
    """The exact `/bin/sh -c` string for argv: quoting that survives any login shell."""
    return shlex.join(["/bin/sh", "-c", shlex.join(list(argv))])


async def stream_batches(host: Host, argv: Sequence[str]) -> AsyncGenerator[list[str], None]:
    """Host.stream's lines in batches: a read at a time where the host reads in bulk
    (LocalHost.stream_batches), else one line per batch. A flood then costs the
    consumer one step per read instead of one per line."""
    batched = getattr(host, "stream_batches", None)
    if batched is not None:
        async with aclosing(batched(argv)) as batches:  # closed with us: the process ends
            async for batch in batches:
                yield batch
        return
    lines = host.stream(argv)
    try:
        async for line in lines:
            yield [line]
    finally:
        close = getattr(lines, "aclose", None)  # an async generator: the process ends
        if close is not None:
            await close()
