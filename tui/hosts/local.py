"""LocalHost: commands as asyncio subprocesses on this machine."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Sequence

from tui.core.errors import CommandNotFound, CommandTimeout, HostError
from tui.hosts.base import OVERLONG_LINE, CommandResult

_STREAM_LIMIT_BYTES = 4 * 1024 * 1024


async def _end_process(process: asyncio.subprocess.Process, grace_s: float = 2.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it lingers."""
    if process.returncode is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), grace_s)
            return
        except TimeoutError:
            continue


async def _lines(reader: asyncio.StreamReader) -> AsyncIterator[str]:
    """Decoded lines; one over the reader's limit becomes OVERLONG_LINE, never an exception."""
    skipping = False
    while True:
        try:
            raw = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as error:
            if error.partial and not skipping:
                yield error.partial.decode(errors="replace").rstrip("\r\n")
            elif skipping:
                yield OVERLONG_LINE
            return
        except asyncio.LimitOverrunError as error:
            # drop what is buffered (and the newline, if the line ends inside the buffer)
            ended = "is found" in str(error)  # asyncio: "Separator is found, but chunk ..."
            await reader.readexactly(error.consumed + (1 if ended else 0))
            if ended:
                skipping = False
                yield OVERLONG_LINE
            else:
                skipping = True
            continue
        if skipping:
            skipping = False
            yield OVERLONG_LINE
            continue
        yield raw.decode(errors="replace").rstrip("\r\n")


# One read of a stream taken as a batch of lines: ~1,000 journal entries of a flood.
_BATCH_READ_BYTES = 256 * 1024


async def _line_batches(reader: asyncio.StreamReader) -> AsyncIterator[list[str]]:
    """What `_lines` yields, a read at a time: a flood costs one await per read, not per line.

    A line over the stream limit becomes OVERLONG_LINE (its bytes dropped as they come),
    the last line without a newline is yielded at the end, as `_lines` does.
    """
    pending = b""
    skipping = False  # inside a line over the limit: drop bytes up to its end
    while True:
        chunk = await reader.read(_BATCH_READ_BYTES)
        if not chunk:
            if skipping:
                yield [OVERLONG_LINE]
            elif pending:
                yield [pending.decode(errors="replace").rstrip("\r\n")]
            return
        batch: list[str] = []
        if skipping:
            end = chunk.find(b"\n")
            if end < 0:
                continue
            chunk, skipping = chunk[end + 1 :], False
            batch.append(OVERLONG_LINE)
        pending += chunk
        end = pending.rfind(b"\n")
        if end >= 0:
            block, pending = pending[:end], pending[end + 1 :]
            batch += _decoded_lines(block)
        if len(pending) > _STREAM_LIMIT_BYTES:
            pending, skipping = b"", True
        if batch:
            yield batch


def _decoded_lines(block: bytes) -> list[str]:
    """The lines of a block of whole lines, decoded at once as `_lines` decodes each.

    A newline byte never sits inside a UTF-8 sequence, so it ends a broken one just as
    the end of a line decoded alone does.
    """
    if len(block) > _STREAM_LIMIT_BYTES:  # one of its lines may be over the limit
        return [
            OVERLONG_LINE
            if len(raw) > _STREAM_LIMIT_BYTES
            else raw.decode(errors="replace").rstrip("\r")
            for raw in block.split(b"\n")
        ]
    text = block.decode(errors="replace")
    lines = text.split("\n")
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    return lines


class LocalHost:
    """This machine. Each command runs in its own process group so it can be ended whole."""

    is_local = True

    def __init__(self, label: str = "local") -> None:
        self.label = label
        self._streams: set[asyncio.subprocess.Process] = set()

    async def _spawn(
        self, argv: Sequence[str], stdin_text: str | None
    ) -> asyncio.subprocess.Process:
        if not argv:
            raise HostError(self.label, "empty command")
        try:
            return await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE
                if stdin_text is not None
                else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=_STREAM_LIMIT_BYTES,
            )
        except FileNotFoundError:
            raise CommandNotFound(self.label, f"command not found: {argv[0]}") from None
        except PermissionError:
            raise HostError(self.label, f"permission denied: {argv[0]}") from None

    async def run(
        self,
        argv: Sequence[str],
        timeout_s: float = 30.0,
        stdin_text: str | None = None,
    ) -> CommandResult:
        started = time.monotonic()
        process = await self._spawn(argv, stdin_text)
        data = stdin_text.encode() if stdin_text is not None else None
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(data), timeout_s)
        except TimeoutError:
            await _end_process(process)
            raise CommandTimeout(
                self.label, f"{argv[0]} ran past {timeout_s:g} s and was ended"
            ) from None
        except asyncio.CancelledError:
            await _end_process(process)
            raise
        return CommandResult(
            argv=tuple(argv),
            exit_status=process.returncode if process.returncode is not None else -1,
            stdout=stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            duration_s=time.monotonic() - started,
        )

    @contextlib.asynccontextmanager
    async def _stdout_of(
        self, argv: Sequence[str], stdin_text: str | None
    ) -> AsyncIterator[asyncio.StreamReader]:
        """A streamed command's stdout, its stdin fed; the process ended however reading ends."""
        process = await self._spawn(argv, stdin_text)
        self._streams.add(process)
        try:
            if stdin_text is not None and process.stdin is not None:
                process.stdin.write(stdin_text.encode())
                await process.stdin.drain()
                process.stdin.close()
            assert process.stdout is not None
            yield process.stdout
            await process.wait()
        finally:
            self._streams.discard(process)
            await _end_process(process)

    async def stream(
        self, argv: Sequence[str], stdin_text: str | None = None
    ) -> AsyncIterator[str]:
        async with self._stdout_of(argv, stdin_text) as stdout:
            async for raw_line in _lines(stdout):
                yield raw_line

    async def stream_batches(
        self, argv: Sequence[str], stdin_text: str | None = None
    ) -> AsyncIterator[list[str]]:
        """`stream`'s lines a read at a time (see `tui.hosts.base.stream_batches`)."""
        async with self._stdout_of(argv, stdin_text) as stdout:
            async for batch in _line_batches(stdout):
                yield batch

    async def read_file(self, path: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        def _read() -> bytes:
            with open(path, "rb") as handle:
                return handle.read(max_bytes)

        try:
            return await asyncio.to_thread(_read)
        except OSError as error:
            raise HostError(self.label, f"cannot read {path}: {error.strerror}") from None

    async def close(self) -> None:
        for process in list(self._streams):
            await _end_process(process)
        self._streams.clear()
