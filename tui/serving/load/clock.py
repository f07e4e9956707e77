"""When a log line was logged: the `MM-DD HH:MM:SS` of a vLLM prefix as epoch seconds.

A log flood repeats the same minute thousands of times: mktime (and localtime for the
year) cost more than the rest of the parse, so `StampClock` keeps the year per wall-clock
second and each minute's start per (year, `MM-DD HH:MM` as written); a second within the
minute adds. One clock serves the process (CLOCK): the caches hold no state of a log.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from tui.logs.line import LogLine
from tui.serving.load import patterns as p

_HALF_YEAR_S = 183 * 86400.0


def _mktime(year: int, month: int, day: int, hour: int, minute: int, second: int) -> float | None:
    try:
        return time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
    except (OverflowError, ValueError):
        return None


class StampClock:
    """The caches of a stamp's parse: the local year, each minute's start, their zone."""

    MINUTES_MAX = 4096

    def __init__(self) -> None:
        self._year_at = (-1, 0)  # (the wall-clock second, the local year then)
        self._minute_start_s: dict[tuple[int, str], float | None] = {}
        self._zone: object = None  # the time zone the cached minutes were computed in

    def local_year(self) -> int:
        now = int(time.time())
        if self._year_at[0] != now:
            self._year_at = (now, time.localtime(now).tm_year)
        return self._year_at[1]

    def check_zone(self) -> None:
        """After a tzset, minutes start anew."""
        zone = (time.timezone, time.altzone, time.tzname)
        if zone != self._zone:
            self._zone = zone
            self._minute_start_s.clear()

    def stamp_s(self, match: re.Match[str], year: int) -> float | None:
        """A VLLM_TIMESTAMP match as epoch seconds in `year` (check_zone first)."""
        stamp = match.group(0)  # `MM-DD HH:MM:SS ` (15 characters: one per digit)
        second = int(stamp[12:14])
        if second >= 60:  # mktime normalises a leap or bad second: leave that to it
            month, day, hour, minute = (int(g) for g in match.groups()[:4])
            return _mktime(year, month, day, hour, minute, second)
        key = (year, stamp[:11])  # the minute as written: no int() for a minute already seen
        minutes = self._minute_start_s
        try:
            start = minutes[key]
        except KeyError:
            if len(minutes) >= self.MINUTES_MAX:
                minutes.clear()
            month, day, hour, minute = (int(g) for g in match.groups()[:4])
            start = minutes[key] = _mktime(year, month, day, hour, minute, 0)
        return None if start is None else start + second


CLOCK = StampClock()


def vllm_line_time_s(text: str, year: int | None = None) -> float | None:
    """The `MM-DD HH:MM:SS` in a vLLM prefix as epoch seconds (local time, given year)."""
    match = p.VLLM_TIMESTAMP.search(text[:80])
    if not match:
        return None
    CLOCK.check_zone()
    return CLOCK.stamp_s(match, year or CLOCK.local_year())


def vllm_line_times_s(texts: Sequence[str]) -> list[float | None]:
    """vllm_line_time_s of each text, at a flood's pace: the year and the time zone read
    once for the batch, and each text searched from two characters before its first `-`
    (every stamp's third character) within its first 80, so a prefix without one costs a
    find, not a regex search."""
    if not texts:
        return []
    year = CLOCK.local_year()
    CLOCK.check_zone()
    search, stamp_s = p.VLLM_TIMESTAMP.search, CLOCK.stamp_s
    out: list[float | None] = []
    add = out.append
    for text in texts:
        dash = text.find("-", 2, 80)
        match = search(text, dash - 2, 80) if dash >= 0 else None
        add(None if match is None else stamp_s(match, year))
    return out


def prefix_time_near_s(text: str, read_s: float | None, year: int | None = None) -> float | None:
    """The vLLM prefix's `MM-DD HH:MM:SS` as epoch seconds (the console's local time zone),
    in the year nearest `read_s` (now for a line read from a file again: no read time),
    and never after it: a line is written before it is read, so a stamp that reads later
    comes from another zone and says less than the read time. `year` (a fixed year, for
    replays of old logs) overrides the nearest one."""
    if year is not None:
        stamp = vllm_line_time_s(text, year)
    else:
        stamp = vllm_line_time_s(text)
        near_s = time.time() if read_s is None else read_s
        if stamp is not None and near_s == near_s:
            if stamp - near_s > _HALF_YEAR_S:
                stamp = vllm_line_time_s(text, CLOCK.local_year() - 1)
            elif near_s - stamp > _HALF_YEAR_S:
                stamp = vllm_line_time_s(text, CLOCK.local_year() + 1)
    if stamp is not None and read_s is not None and stamp > read_s:
        return read_s
    return stamp


def own_time_s(line: LogLine, year: int | None = None) -> float | None:
    """When the line was logged, not read: the journal's time for an entry (it has a
    cursor), else its vLLM prefix's; None for a line that states no time of its own."""
    if line.cursor is not None and line.timestamp_s is not None:
        return line.timestamp_s
    return prefix_time_near_s(line.text, line.timestamp_s, year)
