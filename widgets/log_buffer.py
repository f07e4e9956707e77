"""The log pane's buffer: each line kept as a plain tuple of its fields, read as LogLines.

A tuple of strings and numbers is dropped from the garbage collector's lists, so a full
collection in a flood no longer walks the 50,000 lines of the buffer (15-40 ms each time as
LogLine objects).
"""

from __future__ import annotations

import dataclasses
import operator
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Final, overload

from tui.logs.line import LineEntry, LogLine

_FIELDS = tuple(field.name for field in dataclasses.fields(LogLine))
entry_of = operator.attrgetter(*_FIELDS)
# an entry's fields by position (literals, so each reads as its field's type)
TEXT_AT: Final = 0
TIMESTAMP_AT: Final = 1
LEVEL_AT: Final = 3
assert (_FIELDS[TEXT_AT], _FIELDS[TIMESTAMP_AT], _FIELDS[LEVEL_AT]) == (
    "text",
    "timestamp_s",
    "level",
)


class LineBuffer(Sequence[LogLine]):
    """The pane's buffer read as LogLines (each built anew from its stored fields)."""

    def __init__(self, entries: deque[LineEntry]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> LogLine: ...
    @overload
    def __getitem__(self, index: slice) -> list[LogLine]: ...
    def __getitem__(self, index: int | slice) -> LogLine | list[LogLine]:
        if isinstance(index, slice):
            return [LogLine(*entry) for entry in list(self._entries)[index]]
        return LogLine(*self._entries[index])

    def __iter__(self) -> Iterator[LogLine]:
        return (LogLine(*entry) for entry in self._entries)
