"""Which lines of a batch need LoadTracker.apply; the others only tick the clock.

A line that holds none of the words of the patterns' table (patterns.py: STARTS and JOINS
outside a load; FACTS, the traceback, stated errors and FATAL during one), no `\\r` or
escape, has its own read time, is not too long, and (during a load) is not read as an
error nor follows a traceback's start, changes nothing `apply` keeps but the clock, the
recent context a failure quotes, and the newest own time: the tracker does those for it
(LoadTracker._quiet). Of the stats lines among such lines only the newest that reads as
stats counts: that one needs `apply` too. The prefilter may name a line `apply` then
finds nothing in (it errs one way only: tests/core/test_load_prefilter.py).

A batch's words are searched once over its distinct line shapes (every digit read as 0):
a flood's 2,000 lines are a few dozen shapes, so ~55 word searches cost ~0.2 µs a line.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.logs.line import Level
from tui.serving.load import patterns as p

MAX_LINE_CHARS = 64 * 1024  # of a longer line, apply reads its head and tail
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
STAMP_SHAPE = "00-00 00:00:00"  # a vLLM prefix's `MM-DD HH:MM:SS` as its shape
_ALWAYS = ("\r", "\x1b")  # apply splits tqdm's updates and strips escapes
# Outside a load: the words of a line that may start a load or join one under way
OUTSIDE_WORDS = (*_ALWAYS, *p.words(*p.STARTS, *p.JOINS))
# During a load: a fact or phase, a traceback, a stated error, a fatal message
LOADING_WORDS = (
    *_ALWAYS,
    *p.words(*p.FACTS),
    p.TRACEBACK,
    *p.STATED_ERROR_WORDS,
    *p.words(*p.FAILURES),
)
STATS_WORDS = p.words(*p.STATS)


def line_shapes(joined: str) -> str:
    """The distinct lines of `joined` with every digit read as 0, each after a newline.

    A word `joined` holds (none spans a line; a leading newline is a line's start) is
    in it as its own shape, so a word not found here is not in `joined`."""
    return "\n" + "\n".join(set(joined.translate(_DIGITS_AS_ZERO).split("\n")))


class Prefilter:
    """One batch's columns and its shapes, asked from a line on: which line next needs
    apply, given whether a load has started and a traceback is going on."""

    def __init__(
        self, texts: Sequence[str], stamps: Sequence[float | None], levels: Sequence[str | None]
    ) -> None:
        self.texts, self.stamps, self.levels = texts, stamps, levels
        self.joined = "\n".join(texts)
        self._shapes: str | None = None
        self._present: dict[bool, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._plain: bool | None = None  # every line has a time and a level, none too long

    @property
    def shapes(self) -> str:
        """line_shapes of the batch, made when first asked (a load's ~55 words are searched
        there; outside a load its 8 words in the batch itself)."""
        if self._shapes is None:
            self._shapes = line_shapes(self.joined)
        return self._shapes

    def may_hold_stamps(self) -> bool:
        """False when no line of the batch holds a vLLM prefix's time (known only once
        the shapes are made)."""
        return self._shapes is None or STAMP_SHAPE in self._shapes

    def _words(self, loading: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the words the batch holds, the line starts it holds) of the mode's words."""
        if loading not in self._present:
            if loading:
                shapes = self.shapes
                held = [w for w in LOADING_WORDS if w.translate(_DIGITS_AS_ZERO) in shapes]
            else:
                held = [w for w in OUTSIDE_WORDS if w in self.joined]
            self._present[loading] = (
                tuple(w for w in held if not w.startswith("\n")),
                tuple(w[1:] for w in held if w.startswith("\n")),
            )
        return self._present[loading]

    def _all_plain(self) -> bool:
        if self._plain is None:
            self._plain = (
                None not in self.stamps
                and None not in self.levels
                and max(map(len, self.texts), default=0) <= MAX_LINE_CHARS
            )
        return self._plain

    def next_line(self, start: int, loading: bool, in_traceback: bool) -> tuple[int, int]:
        """(stats, stop): `stop` the first line from `start` on that needs apply (the
        batch's length for none), `stats` the newest line before it that reads as stats
        (-1 for none); the lines between `start` and `stop` but `stats` need none."""
        texts = self.texts
        if loading and in_traceback:
            return -1, start
        words, starts = self._words(loading)
        if (
            not words
            and not starts
            and self._all_plain()
            and (not loading or Level.ERROR not in self.levels)
        ):
            return self._stats_before(start, len(texts)), len(texts)
        stamps, levels, error = self.stamps, self.levels, Level.ERROR
        stop = len(texts)
        for index in range(start, stop):
            text, level = texts[index], levels[index]
            if (
                stamps[index] is None
                or level is None
                or (loading and level == error)
                or len(text) > MAX_LINE_CHARS
                or (words and any(word in text for word in words))
                or (starts and text.startswith(starts))
            ):
                stop = index
                break
        return self._stats_before(start, stop), stop

    def _stats_before(self, start: int, stop: int) -> int:
        """The newest line of [start, stop) that reads as stats, or -1."""
        haystack = self.joined if self._shapes is None else self._shapes
        if not any(word in haystack for word in STATS_WORDS):
            return -1
        texts = self.texts
        for index in range(stop - 1, start - 1, -1):
            text = texts[index]
            if (
                any(word in text for word in STATS_WORDS)
                and text.strip()
                and p.reads_as_stats(p.message_of(text[: p.SCAN_CHARS].rstrip()))
            ):
                return index
        return -1
