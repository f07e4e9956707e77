"""Follow a log file with `tail -F` semantics: survive truncation and rotation.

Locally it is done in Python: seek back to the last N lines (never reading the
whole file), then poll for growth; a smaller size means truncation (read again
from the start), a different inode at the path means rotation (finish the old
file, then open the new one). Remotely it is `tail -n N -F FILE` through the Host.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import BinaryIO

from tui.core.errors import HostError
from tui.hosts.base import Host
from tui.logs.classify import LevelClassifier
from tui.logs.line import LineBatch, LogLine, one_line_batches

_BLOCK_BYTES = 64 * 1024
# The wait between reads at the end of a file written to within the last poll: a busy
# log is read again soon (a flood is not held back 0.1 s a read), an idle one at poll_s.
_BUSY_POLL_S = 0.01
# A chunk is decoded, split and classified at once: ~1,000 lines of a flood, a few ms.
_READ_BYTES = 256 * 1024
MAX_LINE_BYTES = 4 * 1024 * 1024  # a longer line is shown cut, never buffered whole
_CUT_SHOWN_BYTES = 64 * 1024


def _cut_line(head: bytes) -> bytes:
    return head[:_CUT_SHOWN_BYTES] + b" ... [servedeck: line over 4 MiB cut here]"


def offset_of_last_lines(handle: BinaryIO, count: int) -> int:
    """Byte offset where the last `count` lines begin, reading backwards in blocks."""
    handle.seek(0, os.SEEK_END)
    end = handle.tell()
    if count <= 0:
        return end
    position = end
    newlines = 0
    # a final newline ends the last line rather than starting an empty one
    if end > 0:
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            position = end - 1
    while position > 0:
        start = max(0, position - _BLOCK_BYTES)
        handle.seek(start)
        block = handle.read(position - start)
        index = len(block)
        while True:
            index = block.rfind(b"\n", 0, index)
            if index < 0:
                break
            newlines += 1
            if newlines == count:
                return start + index + 1
        position = start
    return 0


class FileFollower:
    """Yields the last N lines of a local file, then every line appended to it."""

    def __init__(
        self,
        path: str,
        *,
        initial_lines: int = 200,
        follow: bool = True,
        poll_s: float = 0.1,
    ) -> None:
        self.path = path
        self.initial_lines = initial_lines
        self.follow = follow
        self.poll_s = poll_s
        self.rotations = 0
        self.truncations = 0
        self._classifier = LevelClassifier()
        self.source = f"file:{path}"

    def _line(self, raw: bytes) -> LogLine:
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        return LogLine(
            text=text,
            timestamp_s=time.time(),
            level=self._classifier.classify(text),
            source=self.source,
        )

    def _lines(self, block: bytes) -> LineBatch:
        """The complete lines of a chunk, decoded, split and classified at once.

        Decoding the chunk whole gives what decoding line by line gives: a newline byte
        never sits inside a UTF-8 sequence, so it ends a broken one just as a line end does.
        The lines read together share the time they were read.
        """
        text = block.decode("utf-8", errors="replace")
        texts = text.split("\n")
        if "\r" in text:
            texts = [line.rstrip("\r") for line in texts]
        levels = self._classifier.classify_many(texts, text)
        return LineBatch(texts, levels, time.time(), self.source)

    def _open(self) -> tuple[BinaryIO, int] | None:
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - kept open while following
        except OSError:
            return None
        return handle, os.fstat(handle.fileno()).st_ino

    async def lines(self) -> AsyncIterator[LogLine]:
        async for batch in self.batches():
            for line in batch:
                yield line

    async def batches(self) -> AsyncIterator[Sequence[LogLine]]:
        """The lines of each read (up to _READ_BYTES, ~1,000 lines of a flood) as one batch
        (a LineBatch): the consumer takes a flood a read at a time, not a line at a time."""
        opened = self._open()
        while opened is None:
            if not self.follow:
                return
            await asyncio.sleep(self.poll_s)
            opened = self._open()
        handle, inode = opened
        handle.seek(offset_of_last_lines(handle, self.initial_lines))
        pending = b""
        skipping = False  # inside a line over the limit: drop bytes up to its end
        read_at_s = time.monotonic()  # when a read last found new bytes
        try:
            while True:
                chunk = handle.read(_READ_BYTES)
                if chunk:
                    read_at_s = time.monotonic()
                    if skipping:
                        end = chunk.find(b"\n")
                        if end < 0:
                            continue
                        chunk, skipping = chunk[end + 1 :], False
                    pending += chunk
                    end = pending.rfind(b"\n")
                    batch: Sequence[LogLine] = []
                    if end >= 0:
                        block, pending = pending[:end], pending[end + 1 :]
                        batch = self._lines(block)
                    if len(pending) > MAX_LINE_BYTES:
                        batch = [*batch, self._line(_cut_line(pending))]
                        pending, skipping = b"", True
                    if batch:
                        yield batch
                    await asyncio.sleep(0)  # a file read in full must not hold the loop
                    continue
                if not self.follow:
                    if pending:
                        yield [self._line(pending)]
                    return
                busy = time.monotonic() - read_at_s < self.poll_s
                await asyncio.sleep(min(self.poll_s, _BUSY_POLL_S) if busy else self.poll_s)
                try:
                    status = os.stat(self.path)
                except OSError:
                    continue  # rotated away and not yet recreated
                if status.st_ino != inode:
                    # drain what the old file still holds, then switch
                    rest = handle.read()
                    batch = [self._line(raw) for raw in (pending + rest).split(b"\n") if raw]
                    if batch:
                        yield batch
                    pending = b""
                    reopened = self._open()
                    if reopened is None:
                        continue
                    handle.close()
                    handle, inode = reopened
                    self.rotations += 1
                elif status.st_size < handle.tell():
                    handle.seek(0)
                    pending = b""
                    self.truncations += 1
        finally:
            handle.close()


class RemoteFileFollower:
    """`tail -n N -F FILE` through a Host, resumed after a dropped connection.

    After a reconnect it asks for the last RESUME_LINES lines again and skips up to
    the last lines it already yielded (matched as a sequence), so an outage neither
    repeats lines nor, unless more than RESUME_LINES arrived meanwhile, loses any.
    """

    RESUME_LINES = 1000
    MATCH_LINES = 3

    def __init__(
        self,
        host: Host,
        path: str,
        *,
        initial_lines: int = 200,
        retry_delay_s: float = 1.0,
        max_retry_delay_s: float = 2.0,  # resume within seconds of the host coming back
    ) -> None:
        self.host = host
        self.path = path
        self.initial_lines = initial_lines
        self.retry_delay_s = retry_delay_s
        self.max_retry_delay_s = max_retry_delay_s
        self.reconnects = 0
        self._classifier = LevelClassifier()
        self._recent: deque[str] = deque(maxlen=self.MATCH_LINES)
        self.source = f"file:{host.label}:{path}"

    def argv(self, count: int | None = None) -> list[str]:
        return ["tail", "-n", str(self.initial_lines if count is None else count), "-F", self.path]

    def _line(self, text: str) -> LogLine:
        self._recent.append(text)
        return LogLine(
            text=text,
            timestamp_s=time.time(),
            level=self._classifier.classify(text),
            source=self.source,
        )

    async def lines(self) -> AsyncIterator[LogLine]:
        delay_s = self.retry_delay_s
        resuming = False
        while True:
            skip = list(self._recent) if resuming else []
            backlog: list[str] = []
            matched = not skip
            try:
                count = self.RESUME_LINES if resuming else None
                first = True
                async for text in self.host.stream(self.argv(count)):
                    if first and resuming:
                        self.reconnects += 1  # counted once a resumed stream delivers
                    first = False
                    delay_s = self.retry_delay_s
                    if not matched:
                        backlog.append(text)
                        if backlog[-len(skip) :] == skip:
                            matched, backlog = True, []
                        elif len(backlog) > self.RESUME_LINES:
                            # Our last lines scrolled out of the window: show what is there.
                            yield self._line(_gap_note(len(backlog)))
                            for old in backlog:
                                yield self._line(old)
                            matched, backlog = True, []
                        continue
                    yield self._line(text)
            except HostError:
                if not resuming and not self._recent:
                    raise
            # The stream ended (connection lost or tail exited): resume after a pause.
            if not matched and backlog:
                # Our last lines are gone from the window: say so, then show what is there.
                yield self._line(
                    f"servedeck: {len(backlog)}+ lines arrived while disconnected; some may be missing"
                )
                for text in backlog:
                    yield self._line(text)
            resuming = True
            await asyncio.sleep(delay_s)
            delay_s = min(self.max_retry_delay_s, delay_s * 2)


def _gap_note(count: int) -> str:
    return f"servedeck: {count}+ lines arrived while disconnected; some may be missing"


def follow_file(
    host: Host, path: str, *, initial_lines: int = 200, follow: bool = True
) -> AsyncIterator[LogLine]:
    """Local files in Python; remote files through `tail -F` on the host."""
    if host.is_local:
        return FileFollower(path, initial_lines=initial_lines, follow=follow).lines()
    if not follow:
        return _remote_tail_once(host, path, initial_lines)
    return RemoteFileFollower(host, path, initial_lines=initial_lines).lines()


def follow_file_batches(
    host: Host, path: str, *, initial_lines: int = 200, follow: bool = True
) -> AsyncIterator[Sequence[LogLine]]:
    """follow_file's lines, a local read at a time (a remote `tail -F` line by line)."""
    if host.is_local:
        return FileFollower(path, initial_lines=initial_lines, follow=follow).batches()
    return one_line_batches(follow_file(host, path, initial_lines=initial_lines, follow=follow))


async def _remote_tail_once(host: Host, path: str, count: int) -> AsyncIterator[LogLine]:
    result = await host.run(["tail", "-n", str(count), path])
    classifier = LevelClassifier()
    for text in result.stdout.splitlines():
        yield LogLine(text=text, level=classifier.classify(text), source=f"file:{path}")
