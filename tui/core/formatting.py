"""Human text for sizes and durations: the one formatting module of the panes, commands and summary.

Pure functions (no I/O), so widgets import them as freely as the core does. One
size format (`gib`); the duration styles differ on purpose, each for where its
width matters, and live here side by side so a pane picks one instead of writing
another:

- `duration_compact`: 12s, 4m10s, 2h05m, 3d04h (table columns: GPU processes, fleet);
- `duration_words`: 37 s, 4 min 5 s, 2 h 3 min (a note on how old the shown data is);
- `duration_clock`: 4:05, 1:02:03 (the load strip's running timers);
- `duration_markdown`: 4.2 s, 3 m 05 s, 1 h 02 m (the summary's timeline);
- `uptime`: 3h 4m, 2d 3h 4m (the host overview);
- `milliseconds`: 100 ms, 2 s (SLO thresholds);
- `clipped`: a long text cut to its head, saying how much was cut.

`printable` escapes control characters in text a remote source chose (a label value, a
host name, an error), for every output that a terminal or a Markdown reader shows.
"""

from __future__ import annotations

import re

GIB = 1024**3
NA = "n/a"

# C0 and C1 controls, DEL, the line and paragraph separators and the bidi overrides: what
# would move the cursor, clear the screen, start a forged line or reorder what is read.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # \x1b, \n, \t, \u202e


def printable(text: str) -> str:
    """`text` with its control characters written as escapes (`\\x1b`, `\\n`): text from a
    remote source is shown to the operator, never obeyed by the terminal."""
    return _UNPRINTABLE.sub(_escape, text)


def gib(value_bytes: float | None, digits: int = 1, missing: str = NA) -> str:
    """12.3 GiB; `missing` when the size is unknown."""
    return missing if value_bytes is None else f"{value_bytes / GIB:.{digits}f} GiB"


def duration_compact(
    seconds: float | None, missing: str = "?", always_minutes: bool = False
) -> str:
    """12s, 4m10s, 2h05m, 3d04h; `always_minutes` gives 0m12s (aligned age columns)."""
    if seconds is None or seconds < 0:
        return missing
    s = int(seconds)
    if s < 60 and not always_minutes:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def duration_words(seconds: float) -> str:
    """37 s, 4 min 5 s, 2 h 3 min: how old the shown data is."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def duration_clock(seconds: float | None) -> str:
    """4:05 or 1:02:03 (a running timer); -- when unknown."""
    if seconds is None:
        return "--"
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def duration_markdown(seconds: float | None) -> str:
    """`4.2 s`, `42 s`, `3 m 05 s`, `1 h 02 m`: what a person reads in a timeline."""
    if seconds is None:
        return NA
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} m {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} m"


def uptime(uptime_s: float | None) -> str:
    """3h 4m, or 2d 3h 4m; ? when unknown."""
    if uptime_s is None:
        return "?"
    days, rest = divmod(int(uptime_s), 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    return f"{days}d {hours}h {minutes}m" if days else f"{hours}h {minutes}m"


def milliseconds(ms: float) -> str:
    """100 ms, or 2 s from 1000 ms up (SLO thresholds as an operator writes them)."""
    return f"{ms / 1000:g} s" if ms >= 1000 else f"{ms:g} ms"


def clipped(text: str, max_chars: int) -> str:
    """`text`, or its first `max_chars` characters, an ellipsis and how many were cut:
    a hostile or corrupted input cannot flood a report, and the cut is not hidden."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}… ({len(text) - max_chars:,} characters cut)"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 user', '31 users': a count with its noun in the right number."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def prediction_error(off_s: float) -> str:
    """How far a prediction was off: 'on time' under half a second, never '-0 s'."""
    if abs(off_s) < 0.5:
        return "on time (within 1 s)"
    return f"off by {off_s:+.0f} s"
