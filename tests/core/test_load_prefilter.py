"""The prefilter never lets through a line `apply` would act on.

For every line the prefilter passes (it names neither it nor a stats line in its place),
`apply` of that line alone leaves the tracker as the quiet tick (LoadTracker._quiet)
does: the same clock, recent context, own time, phase, facts, failure and traceback. A
stats line it passes may change the stats alone, and only where a newer stats line of the
same quiet run, the one it names, overwrites them. Generated batches, from every state a
batch can find the tracker in: before a load, during one, inside a traceback, failed.
"""

from __future__ import annotations

import copy
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import STATS, TRICKY_LEVEL_LINES
from tui.logs.classify import LevelClassifier
from tui.logs.line import LineBatch, LogLine
from tui.serving.load.prefilter import LOADING_WORDS, Prefilter, line_shapes
from tui.serving.load.tracker import LoadTracker

PIECES = (
    "(Worker pid=1) ",
    "INFO ",
    "WARNING ",
    "ERROR ",
    "CRITICAL ",
    "FATAL ",
    "11-29 10:00:00 ",
    "[x.py:1] ",
    "INFO:  ",
    "E1129 10:00:00.000 ",
    "[F1129 ",
    "ValueError: ",
    "RuntimeError: ",
    "CUDA out of memory",
    "Killed",
    "Traceback (most recent call last):",
    "  ",
    "Avg prompt throughput: ",
    STATS.format(s=3, i=7),
    "Decode batch. #running-req: 3, token usage: 0.5, gen throughput (token/s): 9.0, #queue-req: 0",
    "Maximum concurrency for ",
    "Loading safetensors checkpoint shards: 50% Completed | 1/2 [00:01<00:01",
    "Starting to load model m...",
    "Application startup complete.",
    "Shutting down",
    "vLLM API server version 0.32.0",
    "version",
    "\r",
    "\x1b[31m",
    "word ",
    "\u2588 ",
)
STATES = {
    "outside": [],
    "loading": ["(APIServer pid=1) INFO 11-29 10:00:00 [a.py:1] vLLM API server version 0.32.0"],
    "traceback": [
        "(APIServer pid=1) INFO 11-29 10:00:00 [a.py:1] vLLM API server version 0.32.0",
        "Traceback (most recent call last):",
    ],
    "failed": [
        "(APIServer pid=1) INFO 11-29 10:00:00 [a.py:1] vLLM API server version 0.32.0",
        *TRICKY_LEVEL_LINES,
    ],
}
STAMPS = st.one_of(
    st.none(),
    st.floats(1.8e9, 1.8e9 + 100),
    st.sampled_from([math.nan, math.inf, 1.7e9]),
)


def state(tracker: LoadTracker) -> dict[str, str]:
    return {name: repr(value) for name, value in vars(tracker).items()}


def passed_lines_change_nothing_but_the_tick(
    tracker: LoadTracker, lines: list[LogLine] | LineBatch
) -> None:
    """Each quiet run's lines checked alone against apply, then the tracker moved on by
    apply of every line (the semantics), so later runs start from a state it reached."""
    texts = [line.text for line in lines]
    gate = Prefilter(texts, [line.timestamp_s for line in lines], [line.level for line in lines])
    start = 0
    while start < len(texts):
        stats, stop = gate.next_line(
            start, tracker._load_started is not None, tracker._in_traceback
        )
        assert start <= stop and (stats == -1 or start <= stats < stop)
        for index in range(start, stop):
            if index == stats:
                continue
            applied, ticked = copy.deepcopy(tracker), copy.deepcopy(tracker)
            applied.apply(lines[index])
            ticked._quiet(lines, gate, index, index + 1)
            after, quiet = state(applied), state(ticked)
            if after["_stats"] != quiet["_stats"]:
                assert stats > index, texts[index]  # a newer stats line counts
                after.pop("_stats"), quiet.pop("_stats")
            assert after == quiet, texts[index]
        for line in lines[start : stop + 1]:
            tracker.apply(line)
        start = stop + 1


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(STATES)),
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(PIECES), max_size=5).map("".join),
            STAMPS,
            st.sampled_from(["INFO", "WARNING", "ERROR", "classify"]),
        ),
        max_size=25,
    ),
    st.booleans(),
)
def test_the_prefilter_passes_no_line_apply_acts_on(
    start: str, rows: list[tuple[str, float | None, str]], as_batch: bool
) -> None:
    tracker = LoadTracker(year=2026)
    for text in STATES[start]:
        tracker.apply(LogLine(text, 1.8e9, None, LevelClassifier().classify(text)))
    classifier = LevelClassifier()
    levels = [
        classifier.classify(text) if level == "classify" else level for text, _, level in rows
    ]
    if as_batch:  # one read: one time for every line
        read_s = rows[0][1] if rows else None
        batch = LineBatch([text for text, _, _ in rows], levels, read_s, "file:x")
        passed_lines_change_nothing_but_the_tick(tracker, batch)
    else:
        lines = [
            LogLine(text, t, None, level) for (text, t, _), level in zip(rows, levels, strict=True)
        ]
        passed_lines_change_nothing_but_the_tick(tracker, lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(st.sampled_from([*PIECES, "7", "\n", "E", "[F"]), max_size=6).map("".join),
        max_size=6,
    )
)
def test_a_word_a_batch_holds_is_in_its_line_shapes(texts: list[str]) -> None:
    """The prefilter searches a batch's words over its line shapes: one there for every
    word (digits too) the batch holds, a line's start (a leading newline) included."""
    joined = "\n".join(texts)
    shapes = line_shapes(joined)
    zero = str.maketrans("123456789", "000000000")
    for word in LOADING_WORDS:
        assert "\n" not in word[1:]  # a word spanning lines would not be found line by line
        if word.startswith("\n"):
            for line in joined.split("\n"):  # the first line's start as any other's
                if line.startswith(word[1:]):
                    assert word.translate(zero) in shapes, (word, joined)
        elif word in joined:
            assert word.translate(zero) in shapes, (word, joined)
