"""One log line as every follower yields it, and how its severity is read from the text.

vLLM prints `(Proc pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] message`; uvicorn prints
`INFO:     ...`; Python prints warnings and tracebacks bare; SGLang prints no level
at all. Severity therefore comes from the text first and the journal priority second.
"""

from __future__ import annotations

import re
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
_ANSI_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_VLLM_LEVEL = re.compile(
    r"^(?:\([^)]*\)\s+)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d\s\d\d:\d\d:\d\d"
)
_PLAIN_LEVEL = re.compile(
    r"^(?:\[?\d{4}-\d\d-\d\d[ T][\d:,.]+\]?\s*)?(?:[\w.]+\s+)?(?:\[)?"
    r"(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)(?:\])?[:\s]"
)
_GLOG = re.compile(r"^\[?([IWEF])\d{4} \d\d:\d\d:\d\d")
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt)(?::|$)")
_PY_WARNING = re.compile(r"\b\w*Warning: ")
_PY_WARNING_LINE = re.compile(r"^\S{1,512}:\d{1,9}: \w{0,64}Warning: ")
_ERROR_WORDS = re.compile(
    r"(?i)\b(?:out of memory|cuda error|segmentation fault|core dumped|fatal)\b"
)
_TRACEBACK = "Traceback (most recent call last):"


def strip_ansi(text: str) -> str:
    """The text with every ANSI escape (colours, cursor moves, OSC titles) removed."""
    if "\x1b" not in text:
        return text
    return _ANSI_CSI.sub("", text)


def _normal(name: str) -> str:
    if name in ("WARN",):
        return Level.WARNING
    if name in ("CRITICAL", "FATAL"):
        return Level.ERROR
    return name


def explicit_level(text: str) -> str | None:
    """The level the line itself states, or None when it states none."""
    match = _VLLM_LEVEL.match(text)
    if match:
        return _normal(match.group(1))
    return _non_vllm_level(text)


def _non_vllm_level(text: str) -> str | None:
    """explicit_level for a line without vLLM's prefix (plain `LEVEL:` or glog)."""
    match = _PLAIN_LEVEL.match(text)
    if match:
        return _normal(match.group(1))
    glog = _GLOG.match(text)
    if glog:
        return {"I": Level.INFO, "W": Level.WARNING}.get(glog.group(1), Level.ERROR)
    return None


def priority_level(priority: int | None) -> str | None:
    """syslog priority (0 emerg .. 7 debug) to a Level."""
    if priority is None:
        return None
    if priority <= 3:
        return Level.ERROR
    if priority == 4:
        return Level.WARNING
    if priority == 7:
        return Level.DEBUG
    return Level.INFO


class LevelClassifier:
    """Reads severity line by line, remembering whether it is inside a Traceback block.

    A traceback's frames are indented and carry no level, so without state they
    would show as INFO and vanish under an "errors only" filter.
    """

    def __init__(self) -> None:
        self._in_traceback = False

    def classify(self, text: str, priority: int | None = None) -> str:
        plain = strip_ansi(text)
        vllm = _VLLM_LEVEL.match(plain)  # matched once: it gives the level and the body
        if vllm:
            stated: str | None = _normal(vllm.group(1))
            body = plain[vllm.end() :].lstrip()
        else:
            stated = _non_vllm_level(plain)
            body = plain.lstrip() if stated else plain
        if _TRACEBACK in plain:
            self._in_traceback = True
            return Level.ERROR
        if self._in_traceback:
            if body.startswith((" ", "\t", "^", "~")) or not body or body.startswith("During "):
                return Level.ERROR
            if _EXCEPTION_LINE.match(body):
                return Level.ERROR
            if body.startswith(("The above exception", "[rank")):
                return Level.ERROR
            self._in_traceback = False
        if stated:
            return stated
        if _PY_WARNING_LINE.match(body):  # `x.py:9: UserWarning: ... out of memory` warns
            return Level.WARNING
        if _EXCEPTION_LINE.match(body) or _ERROR_WORDS.search(body):
            return Level.ERROR
        if _PY_WARNING.search(body):
            return Level.WARNING
        return priority_level(priority) or Level.INFO

    def classify_many(
        self,
        texts: Sequence[str],
        joined: str | None = None,
        priorities: Sequence[int | None] | None = None,
    ) -> list[str]:
        """`classify` for consecutive lines, with the same answers, at a flood's pace.

        The chunk (`joined`: the texts joined, when the caller has it) is searched once for
        what needs the line-by-line reading: an escape, a Traceback, or a traceback still
        open. Without them a line with vLLM's prefix states its level and nothing else
        changes it, so one match per line is all it costs; other lines take `classify`.
        `priorities` (journal entries) are each line's syslog priority, as `classify` takes.
        """
        if joined is None:
            joined = "\n".join(texts)
        classify = self.classify
        if priorities is None:
            priorities = [None] * len(texts)
        if self._in_traceback or _TRACEBACK in joined or "\x1b" in joined:
            return [
                classify(text, priority) for text, priority in zip(texts, priorities, strict=True)
            ]
        stated = _STATED
        info = Level.INFO
        # one match per line, in map (no bytecode per line for the call), then its level
        matches = list(map(_VLLM_LEVEL.match, texts))
        levels: list[str] = [stated[match[1]] if match else info for match in matches]
        if None not in matches:
            return levels
        # the lines without vLLM's prefix, which may say more (their INFO is set below)
        others = [index for index, match in enumerate(matches) if match is None]
        # Only those lines are searched for the body patterns' words (in a vLLM log most lines
        # have the prefix): classify is pure on them here (no traceback in the chunk), so a
        # line without those words states its level or has only its priority to say more.
        if _quiet("\n".join([texts[index] for index in others])):
            for index in others:
                levels[index] = (
                    _non_vllm_level(texts[index]) or priority_level(priorities[index]) or Level.INFO
                )
        else:
            for index in others:
                levels[index] = classify(texts[index], priorities[index])
        return levels


# Literals in every match of the body patterns classify reads when a line states no level:
# _PY_WARNING(_LINE) "Warning: ", _EXCEPTION_LINE one of the four names, _ERROR_WORDS one of
# its words (case-insensitive: exact by lowercasing only for ASCII text).
_BODY_WORDS = ("Warning: ", "Error", "Exception", "Exit", "Interrupt")
_ERROR_WORDS_LOWER = ("out of memory", "cuda error", "segmentation fault", "core dumped", "fatal")


def _quiet(text: str) -> bool:
    """Whether no line of `text` can match a body pattern (so none reads as warning or error)."""
    if not text.isascii() or any(word in text for word in _BODY_WORDS):
        return False
    lower = text.lower()
    return not any(word in lower for word in _ERROR_WORDS_LOWER)


_STATED: dict[str, str] = {
    name: _normal(name) for name in ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL")
}
