"""Follow a unit's journal through any Host, resuming after the last cursor.

`journalctl -o json` gives each entry with its `__CURSOR`. After the stream ends
for any reason (network drop, journalctl killed, host reconnect) the follower
starts again with `--after-cursor LAST`, and also drops any cursor it has
already yielded, so nothing is lost or repeated. A partial JSON line from a
killed stream fails to decode and is skipped: its entry is re-read after resume.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing

from tui.core.errors import HostError
from tui.hosts.base import OVERLONG_LINE, Host, stream_batches
from tui.logs.classify import LevelClassifier
from tui.logs.journal_entry import MAX_ENTRY_CHARS, entry_fields, flood_columns, loads_entry
from tui.logs.line import Level, LogLine, lines_from_columns

_RECENT_CURSORS = 4096
_CURSOR = re.compile(r'"__CURSOR"\s*:\s*"([^"\\]{1,1024})"')
_CURSOR_SCAN_CHARS = 8192
# journald's cursors are ~100 characters. A longer one (a broken or hostile stream) is not
# trusted: as `--after-cursor` it could not even be passed to journalctl (a 1 MiB
# argument is over the kernel's limit), so the follower resumes from the entry's time.
MAX_CURSOR_CHARS = 4096
UNTRUSTED_CURSOR_NOTE = (
    "servedeck: journal cursor over 4 KiB not trusted; "
    "following from the time of the last entry instead"
)


# The fields the console reads besides the four journalctl always prints with
# --output-fields (__CURSOR, __REALTIME_TIMESTAMP, __MONOTONIC_TIMESTAMP, _BOOT_ID): an
# entry of a real unit carries ~25 more (_PID, _CMDLINE, _SYSTEMD_CGROUP, ...), which
# journalctl would format and the follower decode for nothing.
OUTPUT_FIELDS = "MESSAGE,PRIORITY"
_NARROWING = f"--output-fields={OUTPUT_FIELDS}"


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
        # Where to resume when the last entry's cursor is not trusted: its time (or the
        # newest time seen before it), for `--since`.
        self.resume_since_s: float | None = None
        self._last_time_s: float | None = None
        self._untrusted_said = False
        self._untrusted_due = False
        self.reconnects = 0
        self.skipped_entries = 0
        self._cut_line = False
        self._retry_delay_s = retry_delay_s
        self._max_retry_delay_s = max_retry_delay_s
        self._on_reconnect = on_reconnect
        self._recent: deque[str] = deque(maxlen=_RECENT_CURSORS)
        self._recent_set: set[str] = set()
        self._classifier = LevelClassifier()
        self.source = f"journal:{unit or journal_file}"
        self._narrow = True  # --output-fields, until a journalctl (systemd < 236) refuses it

    def argv(self) -> list[str]:
        """The journalctl command for the next (re)start."""
        argv = ["journalctl", "-o", "json", "--no-pager", "--all"]
        if self._narrow:
            argv.append(_NARROWING)
        if self.journal_file:
            argv += ["--file", self.journal_file]
        if self.unit:
            argv += ["-u", self.unit]
        argv += self.resume_args()
        if self.follow:
            argv.append("-f")
        return argv

    def resume_args(self) -> list[str]:
        """Where the next start begins: after the last cursor; from the last entry's time
        when its cursor was not trusted (the entries seen again are dropped by their
        cursors); else the last `initial_lines`. Every entry after it, however many: the
        gap must be filled."""
        if self.last_cursor:
            return ["--after-cursor", self.last_cursor, "--no-tail"]
        if self.resume_since_s is not None:
            return ["--since", f"@{self.resume_since_s:.6f}", "--no-tail"]
        return ["-n", str(self.initial_lines)]

    def _position(self, cursor: str, timestamp_s: float | None) -> None:
        """The last entry read: its cursor where trusted, else its time (said once)."""
        if timestamp_s is not None:
            self._last_time_s = timestamp_s
        if len(cursor) <= MAX_CURSOR_CHARS:
            self.last_cursor = cursor
            self.resume_since_s = None
            return
        self.last_cursor = None
        self.resume_since_s = self._last_time_s
        if not self._untrusted_said:
            self._untrusted_said = self._untrusted_due = True

    def _untrusted_note(self) -> LogLine | None:
        """The one warning that a cursor was not trusted, once it is due."""
        if not self._untrusted_due:
            return None
        self._untrusted_due = False
        return LogLine(UNTRUSTED_CURSOR_NOTE, level=Level.WARNING, source=self.source)

    def _remember(self, cursor: str) -> bool:
        """True when the cursor is new; keeps a bounded window of recent ones (an untrusted,
        overlong cursor by its digest, so the window stays small)."""
        if len(cursor) > MAX_CURSOR_CHARS:
            cursor = "sha256:" + hashlib.sha256(cursor.encode(errors="replace")).hexdigest()
        if cursor in self._recent_set:
            return False
        if len(self._recent) == self._recent.maxlen:
            self._recent_set.discard(self._recent[0])
        self._recent.append(cursor)
        self._recent_set.add(cursor)
        return True

    def _skipped(self, reason: str, raw: str = "") -> LogLine | None:
        """A bad entry: counted and shown as a warning line; its cursor (if readable) is kept."""
        cursor_match = _CURSOR.search(raw[:_CURSOR_SCAN_CHARS]) if raw else None
        cursor = cursor_match.group(1) if cursor_match else None
        if cursor is not None:
            if not self._remember(cursor):
                return None
            self._position(cursor, None)
        self.skipped_entries += 1
        return LogLine(
            text=f"servedeck: journal entry skipped: {reason} "
            f"({self.skipped_entries} skipped so far)",
            cursor=cursor,
            level=Level.WARNING,
            source=self.source,
        )

    def _decode(self, raw: str) -> LogLine | None:
        """One stream line: its entry's LogLine, a skipped entry's warning, or None."""
        decoded = self._entry(raw)
        if not isinstance(decoded, tuple):
            return decoded
        text, timestamp_s, cursor, priority = decoded
        level = self._classifier.classify(text, priority)
        return LogLine(text, timestamp_s, cursor, level, priority, self.source)

    def _entry(self, raw: str) -> tuple[str, float | None, str | None, int | None] | LogLine | None:
        """An entry's fields (not yet classified), a skipped entry's warning, or None."""
        if raw == OVERLONG_LINE or len(raw) > MAX_ENTRY_CHARS:
            return self._skipped("over 4 MiB", raw if raw != OVERLONG_LINE else "")
        if not raw.startswith("{"):
            return None
        try:
            entry = loads_entry(raw)
        except RecursionError:
            return self._skipped("JSON nested too deeply", raw)
        except ValueError:
            self._cut_line = True  # a killed stream's last line is re-read after resume
            return None
        if not isinstance(entry, dict):
            return self._skipped("not a JSON object", raw)
        cursor = entry.get("__CURSOR")
        if isinstance(cursor, str) and not self._remember(cursor):
            return None
        try:
            fields = entry_fields(entry)
        except (RecursionError, ValueError, TypeError, OverflowError, MemoryError) as error:
            self._forget_last(cursor)
            return self._skipped(f"unreadable ({type(error).__name__})", raw)
        if isinstance(cursor, str):
            self._position(cursor, fields[1])
        return fields

    def _decode_batch(self, raws: list[str]) -> list[LogLine]:
        """The LogLines of a batch of stream lines, in order, classified as one run.

        Skipped entries' warnings never pass the classifier (as line by line), so the
        entries are classified together and the warnings put back at their places.
        """
        if not self._cut_line:
            flood = self._flood_batch(raws)
            if flood is not None:
                return flood
        entries: list[tuple[str, float | None, str | None, int | None]] = []
        warnings: list[tuple[int, LogLine]] = []  # (place in the batch, warning)
        for raw in raws:
            if self._cut_line:
                # the stream went on after a line that was not whole JSON: not a
                # killed stream (that entry would be re-read) but a broken or
                # oversized one (SSH hands a huge line over in pieces)
                self._cut_line = False
                warning = self._skipped("not whole JSON (cut, or too long)")
                if warning is not None:
                    warnings.append((len(entries) + len(warnings), warning))
            decoded = self._entry(raw)
            if isinstance(decoded, tuple):
                entries.append(decoded)
            elif decoded is not None:
                warnings.append((len(entries) + len(warnings), decoded))
            note = self._untrusted_note()
            if note is not None:
                warnings.append((len(entries) + len(warnings), note))
        texts = [entry[0] for entry in entries]
        priorities = [entry[3] for entry in entries]
        levels = self._classifier.classify_many(texts, priorities=priorities)
        source = self.source
        lines = [
            LogLine(text, timestamp_s, cursor, level, priority, source)  # by position: faster
            for (text, timestamp_s, cursor, priority), level in zip(entries, levels, strict=True)
        ]
        if not warnings:
            return lines
        merged: list[LogLine] = []
        taken = 0
        for place, warning in warnings:  # each place counts the lines before it
            step = place - len(merged)
            merged += lines[taken : taken + step]
            taken += step
            merged.append(warning)
        merged += lines[taken:]
        return merged

    def _flood_batch(self, raws: list[str]) -> list[LogLine] | None:
        """A read of plain, new entries decoded as columns (flood_columns); None, with
        nothing changed, for any other read (an entry seen before, too)."""
        columns = flood_columns(raws)
        if columns is None:
            return None
        texts, timestamps_s, cursors, priorities = columns
        if max(map(len, cursors)) > MAX_CURSOR_CHARS:
            return None  # read entry by entry: the untrusted cursor is said and not kept
        recent, recent_set = self._recent, self._recent_set
        if not recent_set.isdisjoint(cursors) or len(set(cursors)) != len(cursors):
            return None
        kept = cursors[-_RECENT_CURSORS:]
        for _ in range(len(recent) + len(kept) - _RECENT_CURSORS):
            recent_set.discard(recent.popleft())
        recent.extend(kept)
        recent_set.update(kept)
        self.last_cursor = cursors[-1]
        self.resume_since_s = None
        self._last_time_s = timestamps_s[-1]
        levels = self._classifier.classify_many(texts, priorities=priorities)
        return lines_from_columns(texts, timestamps_s, cursors, levels, priorities, self.source)

    def _forget_last(self, cursor: object) -> None:
        if isinstance(cursor, str) and cursor in self._recent_set:
            self._recent_set.discard(cursor)
            if self._recent and self._recent[-1] == cursor:
                self._recent.pop()

    async def batches(self) -> AsyncIterator[list[LogLine]]:
        """Every entry once, in order, a stream read at a time; restarts journalctl until
        cancelled."""
        delay_s = self._retry_delay_s
        produced_ever = False
        while True:
            produced = False
            read_any = ended = False
            self._cut_line = False
            argv = self.argv()
            try:
                async with aclosing(stream_batches(self.host, argv)) as stream:
                    async for raws in stream:  # closed with us: journalctl ends
                        read_any = True
                        batch = self._decode_batch(raws)
                        if batch:
                            produced = produced_ever = True
                            yield batch
                ended = True
            except asyncio.CancelledError:
                raise
            except (OSError, HostError):
                if not produced_ever and self.reconnects == 0:
                    raise  # journalctl missing or the host unreachable from the start
                # otherwise a dropped connection: retry below
            # Ended without a line: maybe a journalctl that refuses --output-fields (exit 1);
            # ask again without it (an empty answer asked twice loses nothing, and a
            # journalctl killed before its first line only costs the narrower output).
            refused = ended and not read_any and _NARROWING in argv
            self._narrow = self._narrow and not refused
            if not self.follow:
                if refused:
                    continue
                return
            self.reconnects += 1
            if self._on_reconnect is not None:
                self._on_reconnect(self.reconnects)
            delay_s = self._retry_delay_s if produced else min(delay_s * 2, self._max_retry_delay_s)
            await asyncio.sleep(delay_s * (0.5 + random.random()))

    async def lines(self) -> AsyncIterator[LogLine]:
        """Every entry once, in order; restarts journalctl until cancelled."""
        async for batch in self.batches():
            for line in batch:
                yield line


async def read_journal(
    host: Host, unit: str | None = None, *, journal_file: str | None = None, lines: int = 200
) -> list[LogLine]:
    """The last `lines` entries, without following."""
    follower = JournalFollower(
        host, unit, journal_file=journal_file, initial_lines=lines, follow=False
    )
    return [line async for line in follower.lines()]
