"""One log line as every follower yields it: the line, a read's batch as columns, the
bounded queue between a follower and the console, and which lines are warnings or worse.

The severity itself is read from the text in tui/logs/classify.py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import compress, repeat
from typing import overload


class Level(StrEnum):
    """Severity, ordered from quiet to loud by `LEVEL_RANK`."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"


LEVEL_RANK: dict[str, int] = {Level.DEBUG: 0, Level.INFO: 1, Level.WARNING: 2, Level.ERROR: 3}


@dataclass(frozen=True, slots=True)
class LogLine:
    """A line of service output; `cursor` is the journal cursor when it came from journald."""

    text: str
    timestamp_s: float | None = None
    cursor: str | None = None
    level: str = Level.INFO
    priority: int | None = None
    source: str = ""


def read_lines(
    texts: Sequence[str], levels: Sequence[str], timestamp_s: float | None, source: str
) -> list[LogLine]:
    """LogLines of one read (same time, same source), equal to `LogLine(...)` of each."""
    count = len(texts)  # levels of another count: zip's ValueError
    nones: list[None] = [None] * count
    return lines_from_columns(texts, [timestamp_s] * count, nones, levels, nones, source)


def lines_from_columns(
    texts: Sequence[str],
    timestamps_s: Sequence[float | None],
    cursors: Sequence[str | None],
    levels: Sequence[str],
    priorities: Sequence[int | None],
    source: str,
) -> list[LogLine]:
    """LogLines from a read's columns (one source), equal to `LogLine(...)` of each.

    A frozen dataclass's __init__ sets each field through object.__setattr__; setting the
    slots directly builds a flood's lines in ~60 % of the time.
    """
    new = object.__new__
    out: list[LogLine] = []
    add = out.append
    for text, timestamp_s, cursor, level, priority in zip(
        texts, timestamps_s, cursors, levels, priorities, strict=True
    ):
        line = new(LogLine)
        _SET_TEXT(line, text)
        _SET_TIMESTAMP(line, timestamp_s)
        _SET_CURSOR(line, cursor)
        _SET_LEVEL(line, level)
        _SET_PRIORITY(line, priority)
        _SET_SOURCE(line, source)
        add(line)
    return out


# LogLine's fields in order, as a tuple: what a buffer keeps of each line
LineEntry = tuple[str, float | None, str | None, str, int | None, str]


@dataclass(frozen=True, slots=True, eq=False)
class LineBatch(Sequence[LogLine]):
    """The lines of one read, column by column (one time and source for all): a flood's
    lines are not built as one object each. An item read from it is its LogLine, built
    then; the stages of a flood read the columns."""

    texts: list[str]
    levels: list[str]
    timestamp_s: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.levels):
            raise ValueError(f"{len(self.texts)} texts but {len(self.levels)} levels")

    def __len__(self) -> int:
        return len(self.texts)

    @overload
    def __getitem__(self, index: int) -> LogLine: ...
    @overload
    def __getitem__(self, index: slice) -> LineBatch: ...
    def __getitem__(self, index: int | slice) -> LogLine | LineBatch:
        if isinstance(index, slice):
            return LineBatch(self.texts[index], self.levels[index], self.timestamp_s, self.source)
        (line,) = read_lines(
            [self.texts[index]], [self.levels[index]], self.timestamp_s, self.source
        )
        return line

    def __iter__(self) -> Iterator[LogLine]:
        return iter(read_lines(self.texts, self.levels, self.timestamp_s, self.source))

    def pick(self, indices: Iterable[int]) -> list[LogLine]:
        """The LogLines at `indices` (built at a flood's pace: read_lines)."""
        texts, levels = self.texts, self.levels
        chosen = list(indices)
        return read_lines(
            [texts[i] for i in chosen], [levels[i] for i in chosen], self.timestamp_s, self.source
        )

    def timestamps_s(self) -> list[float | None]:
        return [self.timestamp_s] * len(self.texts)

    def entries(self) -> Iterator[LineEntry]:
        """Each line's fields as a tuple, in LogLine's order, without building the line."""
        return zip(
            self.texts,
            repeat(self.timestamp_s),
            repeat(None),
            self.levels,
            repeat(None),
            repeat(self.source),
            strict=False,  # the repeats are endless: the columns end it
        )


def texts_of(lines: Sequence[LogLine]) -> list[str]:
    """The lines' texts: a LineBatch's own column, else each line's."""
    return lines.texts if isinstance(lines, LineBatch) else [line.text for line in lines]


class LineQueue:
    """Batches read but not taken yet, in order and counted by line: a flood waits as the
    batches it was read in (never line by line), and is taken a part at a time."""

    def __init__(self) -> None:
        self._batches: deque[Sequence[LogLine]] = deque()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[LogLine]:
        for batch in self._batches:
            yield from batch

    def add(self, batch: Sequence[LogLine]) -> None:
        if batch:
            self._batches.append(batch)
            self._count += len(batch)

    def append(self, line: LogLine) -> None:
        self.add([line])

    def take(self, count: int) -> list[Sequence[LogLine]]:
        """Up to `count` lines from the front, in order: each LineBatch (or its front part)
        as it is, the lines of consecutive other batches in one list (a remote tail's
        batches hold one line each)."""
        taken: list[Sequence[LogLine]] = []
        run: list[LogLine] | None = None  # the list the other batches' lines go into
        left = count
        batches = self._batches
        while left > 0 and batches:
            batch = batches[0]
            if len(batch) <= left:
                batches.popleft()
            else:
                batches[0] = batch[left:]
                batch = batch[:left]
            left -= len(batch)
            if isinstance(batch, LineBatch):
                taken.append(batch)
                run = None
            elif run is None:
                run = list(batch)
                taken.append(run)
            else:
                run.extend(batch)
        self._count -= count - left
        return taken


# the slots' own descriptors (LogLine.text is one; reached through __dict__ for the typing)
_SET_TEXT = LogLine.__dict__["text"].__set__
_SET_TIMESTAMP = LogLine.__dict__["timestamp_s"].__set__
_SET_CURSOR = LogLine.__dict__["cursor"].__set__
_SET_LEVEL = LogLine.__dict__["level"].__set__
_SET_PRIORITY = LogLine.__dict__["priority"].__set__
_SET_SOURCE = LogLine.__dict__["source"].__set__


async def one_line_batches(lines: AsyncIterator[LogLine]) -> AsyncIterator[list[LogLine]]:
    """A line source as batches, for the sources that read line by line (a remote tail)."""
    async for line in lines:
        yield [line]


async def flat_lines(batches: AsyncIterator[Sequence[LogLine]]) -> AsyncIterator[LogLine]:
    """A batch source line by line, for the readers that take one line at a time."""
    async for batch in batches:
        for line in batch:
            yield line


def warning_or_worse(line: LogLine) -> bool:
    """Whether a line is a warning or an error: the ones the flight recorder keeps."""
    return LEVEL_RANK.get(line.level, 1) >= _WARNING_RANK


def warnings_or_worse(lines: Iterable[LogLine]) -> list[LogLine]:
    """The lines `warning_or_worse` keeps, picked in one pass over a batch (a LineBatch's
    levels column read, and only the lines kept built)."""
    if isinstance(lines, LineBatch):
        return lines.pick(warning_indices(lines.levels))
    rank = LEVEL_RANK.get
    return [line for line in lines if rank(line.level, 1) >= _WARNING_RANK]


def warning_indices(levels: Sequence[str]) -> list[int]:
    """Where the warnings and errors are in a column of levels, in one C pass."""
    return list(compress(range(len(levels)), map(_LOUD_LEVELS.__contains__, levels)))


_WARNING_RANK = LEVEL_RANK[Level.WARNING]
_LOUD_LEVELS = frozenset(level for level, rank in LEVEL_RANK.items() if rank >= _WARNING_RANK)
