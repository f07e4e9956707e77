"""One journal entry read: its JSON (orjson, bounded in size and depth), its message in
every form journald writes it, its time and priority, and a flood's entries as columns.

Pure functions over the text `journalctl -o json` prints; the follower
(tui/logs/journal.py) reads the stream and keeps the cursors.
"""

from __future__ import annotations

import json
from itertools import repeat
from typing import Any

import orjson

from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine

# journald's own line limit for `journalctl -o json` consumers; longer is not an entry we show
MAX_ENTRY_CHARS = 4 * 1024 * 1024


def decode_message(value: Any) -> str:
    """MESSAGE as journalctl's JSON gives it: a string, a byte array (list of ints), or null.

    Byte arrays appear for non-UTF-8 or control characters (ANSI colours); null
    for fields over the size limit when `--all` is not given.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if value and isinstance(value[0], list):  # a field repeated in one entry
            return "\n".join(_flat_message(part) for part in value)
        if all(isinstance(part, str) for part in value):
            return "\n".join(value)
        return _bytes_message(value)
    return _short_repr(value)


def _flat_message(value: Any) -> str:
    """One repeated part: a string or a byte array; anything deeper is shown, not recursed."""
    if isinstance(value, list) and not any(isinstance(part, list | dict) for part in value):
        if all(isinstance(part, str) for part in value):
            return "\n".join(value)
        return _bytes_message(value)
    if isinstance(value, str):
        return value
    return _short_repr(value)


def _bytes_message(value: list[Any]) -> str:
    """A byte array; an element that is not a byte (null, text, 300) shows as U+FFFD."""
    out = bytearray()
    for part in value:
        if isinstance(part, int) and not isinstance(part, bool) and 0 <= part <= 255:
            out.append(part)
        else:
            out += "\ufffd".encode()
    return out.decode("utf-8", errors="replace")


def _short_repr(value: Any) -> str:
    text = f"[unreadable MESSAGE: {type(value).__name__}]"
    if isinstance(value, bool | int | float):
        text = str(value)
    return text


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


# journald's own range: from the epoch to the year 9999; anything else is not a time
_MAX_REALTIME_US = 253_402_300_799 * 1_000_000


def _realtime_s(value: Any) -> float | None:
    realtime_us = _int_or_none(value)
    if realtime_us is None or not 0 < realtime_us <= _MAX_REALTIME_US:
        return None
    return realtime_us / 1e6


# A line this short, or with fewer brackets, nests too shallow for json's recursion limit
# (~900 levels below a console's stack) or orjson's (1024): both read it or neither.
_SHALLOW = 500


def loads_entry(raw: str) -> Any:
    """json.loads(raw) as the follower reads it, at orjson's pace (~3x) where that is alike.

    orjson answers as json does but for numbers beyond 64 bits (a float where json gives
    an int), so its entry is kept only where the fields read (MESSAGE, PRIORITY, the
    cursor and the time) hold no number but a byte array's exact ints; any other entry,
    and whatever orjson refuses (NaN, 1e400, a lone surrogate, broken JSON), goes to
    json, so a bad entry is reported exactly as before.
    """
    if len(raw) < _SHALLOW or raw.count("[") + raw.count("{") < _SHALLOW:
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return json.loads(raw)
        if type(entry) is dict and _read_alike(entry):
            return entry
    return json.loads(raw)


def _read_alike(entry: dict[str, Any]) -> bool:
    """Whether the fields read hold what json would give: text, null, or bytes as ints."""
    get = entry.get
    for name in ("PRIORITY", "__CURSOR", "__REALTIME_TIMESTAMP"):
        value = get(name)
        if value is not None and type(value) is not str:
            return False
    message = get("MESSAGE")
    if message is None or type(message) is str:
        return True
    return type(message) is list and all(type(part) is int for part in message)


def entry_fields(entry: dict[str, Any]) -> tuple[str, float | None, str | None, int | None]:
    """(text, timestamp_s, cursor, priority) of one decoded journal JSON object."""
    text = decode_message(entry.get("MESSAGE")).rstrip("\n")
    priority = _int_or_none(entry.get("PRIORITY"))
    if priority is not None and not 0 <= priority <= 7:
        priority = None
    cursor = entry.get("__CURSOR")
    return (
        text,
        _realtime_s(entry.get("__REALTIME_TIMESTAMP")),
        cursor if isinstance(cursor, str) else None,
        priority,
    )


# PRIORITY as journalctl prints it, and the level it reads as
_PRIORITY_OF: dict[str | None, int | None] = {str(value): value for value in range(8)}
_PRIORITY_OF[None] = None  # no PRIORITY field
_NO_PRIORITY = -1  # marks a PRIORITY that is neither absent nor "0".."7"

FloodColumns = tuple[list[str], list[float | None], list[str], list[int | None]]


def _plain_long(raw: str) -> bool:
    """A long line read as any other: within the entry limit, and too shallow to nest
    past json's or orjson's depth (loads_entry reads it with orjson too)."""
    return len(raw) <= MAX_ENTRY_CHARS and raw.count("[") + raw.count("{") < _SHALLOW


def flood_columns(raws: list[str]) -> FloodColumns | None:
    """(texts, timestamps_s, cursors, priorities) of a read of plain entries, parsed as one
    JSON array: a flood then costs ~1 µs an entry less than each parsed and read apart.

    None for a read holding anything else (a line that is not an object, a cut or deep
    one, a message in bytes, a PRIORITY or time that reads otherwise): the follower reads
    that one line by line, so what it answers is the same (tests/core/
    test_journal_batch_decode.py). Lines of whole JSON objects joined by commas parse as
    the array of those objects, and a cut line (a prefix of one) cannot close, so the
    count of objects read is checked, not trusted.
    """
    if not raws or not all(map(str.startswith, raws, repeat("{"))):
        return None
    if max(map(len, raws)) >= _SHALLOW and not all(
        _plain_long(raw) for raw in raws if len(raw) >= _SHALLOW
    ):
        return None
    try:
        entries = orjson.loads("[" + ",".join(raws) + "]")
    except orjson.JSONDecodeError:
        return None
    if len(entries) != len(raws):
        return None
    try:
        messages = [entry["MESSAGE"] for entry in entries]
        cursors = [entry["__CURSOR"] for entry in entries]
        realtimes = [entry["__REALTIME_TIMESTAMP"] for entry in entries]
        priorities = [entry.get("PRIORITY") for entry in entries]
    except (KeyError, TypeError):  # a field missing, or not an object
        return None
    if {*map(type, messages), *map(type, cursors), *map(type, realtimes)} != {str}:
        return None
    try:
        priorities = list(map(_PRIORITY_OF.get, priorities, repeat(_NO_PRIORITY)))
    except TypeError:  # a PRIORITY that cannot be a key: a list or an object
        return None
    if _NO_PRIORITY in priorities:
        return None
    try:
        realtimes_us = list(map(int, realtimes))
    except ValueError:
        return None
    if min(realtimes_us) <= 0 or max(realtimes_us) > _MAX_REALTIME_US:
        return None
    texts = list(map(str.rstrip, messages, repeat("\n")))
    return texts, [us / 1e6 for us in realtimes_us], cursors, priorities


def entry_to_line(entry: dict[str, Any], classifier: LevelClassifier, source: str) -> LogLine:
    """One decoded journal JSON object to a LogLine."""
    text, timestamp_s, cursor, priority = entry_fields(entry)
    # by position: keywords cost a flood ~0.5 µs a line
    return LogLine(text, timestamp_s, cursor, classifier.classify(text, priority), priority, source)
