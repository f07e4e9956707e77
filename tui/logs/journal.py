"""Follow a unit's journal through any Host, resuming after the last cursor.

`journalctl -o json` gives each entry with its `__CURSOR`. After the stream ends
for any reason (network drop, journalctl killed, host reconnect) the follower
starts again with `--after-cursor LAST`, and also drops any cursor it has
already yielded, so nothing is lost or repeated. A partial JSON line from a
killed stream fails to decode and is skipped: its entry is re-read after resume.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from tui.errors import HostError
from tui.hosts.base import Host
from tui.logs.line import LevelClassifier, LogLine

_RECENT_CURSORS = 4096


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
            return "\n".join(decode_message(part) for part in value)
        if all(isinstance(part, str) for part in value):
            return "\n".join(value)
        return bytes(int(b) & 0xFF for b in value).decode("utf-8", errors="replace")
    return str(value)


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def entry_to_line(entry: dict[str, Any], classifier: LevelClassifier, source: str) -> LogLine:
    """One decoded journal JSON object to a LogLine."""
    text = decode_message(entry.get("MESSAGE")).rstrip("\n")
    realtime_us = _int_or_none(entry.get("__REALTIME_TIMESTAMP"))
    priority = _int_or_none(entry.get("PRIORITY"))
    return LogLine(
        text=text,
        timestamp_s=realtime_us / 1e6 if realtime_us is not None else None,
        cursor=entry.get("__CURSOR"),
        level=classifier.classify(text, priority),
        priority=priority,
        source=source,
    )


class JournalFollower:
    """Yields LogLines of one unit (or one journal file) and survives stream ends.

    Only needs a Host, so the same code follows a local journal, a remote one
    over SSH, or the simulator's.
    """

    def __init__(
        self,
        host: Host,
        unit: str | None = None,
        *,
        journal_file: str | None = None,
        initial_lines: int = 200,
        follow: bool = True,
        after_cursor: str | None = None,
        retry_delay_s: float = 0.2,
        max_retry_delay_s: float = 2.0,  # resume within seconds of the host coming back
        on_reconnect: Callable[[int], None] | None = None,
    ) -> None:
        if unit is None and journal_file is None:
            raise ValueError("a unit or a journal file is needed")
        self.host = host
        self.unit = unit
        self.journal_file = journal_file
        self.initial_lines = initial_lines
        self.follow = follow
        self.last_cursor = after_cursor
        self.reconnects = 0
        self._retry_delay_s = retry_delay_s
        self._max_retry_delay_s = max_retry_delay_s
        self._on_reconnect = on_reconnect
        self._recent: deque[str] = deque(maxlen=_RECENT_CURSORS)
        self._recent_set: set[str] = set()
        self._classifier = LevelClassifier()
        self.source = f"journal:{unit or journal_file}"

    def argv(self) -> list[str]:
        """The journalctl command for the next (re)start."""
        argv = ["journalctl", "-o", "json", "--no-pager", "--all"]
        if self.journal_file:
            argv += ["--file", self.journal_file]
        if self.unit:
            argv += ["-u", self.unit]
        if self.last_cursor:
            # every entry after the cursor, however many: the gap must be filled
            argv += ["--after-cursor", self.last_cursor, "--no-tail"]
        else:
            argv += ["-n", str(self.initial_lines)]
        if self.follow:
            argv.append("-f")
        return argv

    def _remember(self, cursor: str) -> bool:
        """True when the cursor is new; keeps a bounded window of recent ones."""
        if cursor in self._recent_set:
            return False
        if len(self._recent) == self._recent.maxlen:
            self._recent_set.discard(self._recent[0])
        self._recent.append(cursor)
        self._recent_set.add(cursor)
        return True

    def _decode(self, raw: str) -> LogLine | None:
        if not raw.startswith("{"):
            return None
        try:
            entry = json.loads(raw)
        except ValueError:
            return None  # a line cut by a killed stream: re-read after resume
        if not isinstance(entry, dict):
            return None
        cursor = entry.get("__CURSOR")
        if isinstance(cursor, str) and not self._remember(cursor):
            return None
        line = entry_to_line(entry, self._classifier, self.source)
        if isinstance(cursor, str):
            self.last_cursor = cursor
        return line

    async def lines(self) -> AsyncIterator[LogLine]:
        """Every entry once, in order; restarts journalctl until cancelled."""
        delay_s = self._retry_delay_s
        produced_ever = False
        while True:
            produced = False
            try:
                async for raw in self.host.stream(self.argv()):
                    line = self._decode(raw)
                    if line is not None:
                        produced = produced_ever = True
                        yield line
            except asyncio.CancelledError:
                raise
            except (OSError, HostError):
                if not produced_ever and self.reconnects == 0:
                    raise  # journalctl missing or the host unreachable from the start
                # otherwise a dropped connection: retry below
            if not self.follow:
                return
            self.reconnects += 1
            if self._on_reconnect is not None:
                self._on_reconnect(self.reconnects)
            delay_s = self._retry_delay_s if produced else min(delay_s * 2, self._max_retry_delay_s)
            await asyncio.sleep(delay_s * (0.5 + random.random()))


async def read_journal(
    host: Host, unit: str | None = None, *, journal_file: str | None = None, lines: int = 200
) -> list[LogLine]:
    """The last `lines` entries, without following."""
    follower = JournalFollower(
        host, unit, journal_file=journal_file, initial_lines=lines, follow=False
    )
    return [line async for line in follower.lines()]
