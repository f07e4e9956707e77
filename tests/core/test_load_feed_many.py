"""feed_many is `apply` of each line, at a flood's pace: it ends where line by line ends.

The one path: the prefilter names the lines that need `apply` and the tracker ticks the
clock for the rest (tests/core/test_load_prefilter.py checks the prefilter alone). Checked
after every batch on everything `apply` keeps: the snapshot, the stats, the clock, the
recent context a later failure quotes, the traceback state, the last error. Before a load
(clocks that go back, stats lines that do not read as stats, SGLang decode lines, lines
without a time or given as str, NaN and huge lines) and during one (the traps that need
the full reading: tracebacks across a batch's edge, escapes, glog errors, a new load
amid stats lines).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.load_samples import FACT_SAMPLES
from tests.support.log_samples import STATS, TRICKY_LEVEL_LINES, captured_lines
from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine
from tui.serving.load.tracker import LoadTracker


def mixed_lines() -> list[str]:
    """Captured logs with stats floods and the tricky lines between them."""
    flood = [STATS.format(s=i % 60, i=i) for i in range(40)]
    return [*flood, *TRICKY_LEVEL_LINES, *captured_lines(), *flood, *TRICKY_LEVEL_LINES, *flood]


POLL_STATS = (
    "(APIServer pid=1) INFO 11-29 10:00:{s:02d} [loggers.py:1] Engine 000: Avg prompt "
    "throughput: {i}.0 tokens/s, Avg generation throughput: 5.0 tokens/s, Running: {i} reqs, "
    "Waiting: 0 reqs, GPU KV cache usage: 1.5%, Prefix cache hit rate: 0.0%"
)
DECODE = (
    "[2026-11-29 10:00:00] Decode batch. #running-req: {i}, #token: 10, token usage: 0.01, "
    "gen throughput (token/s): 12.5, #queue-req: 0"
)
ACCESS = '(APIServer pid=1) INFO:     127.0.0.1:{i} - "POST /v1/completions HTTP/1.1" 200 OK'
UNREADABLE = "Avg prompt throughput: unreadable {i}"


def _check_outside(batches: list[list[LogLine | str]]) -> None:
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    for batch in batches:
        for line in batch:
            one.apply(line)
        many.feed_many(batch)
        # repr: a NaN clock equals itself there
        assert repr(many._stats) == repr(one._stats)
        assert repr(many._last_t) == repr(one._last_t)
        assert repr(many.snapshot(now_s=2e9)) == repr(one.snapshot(now_s=2e9))


def test_a_flood_with_clocks_going_back() -> None:
    lines: list[LogLine | str] = []
    for i in range(600):
        text = (POLL_STATS, ACCESS, DECODE, UNREADABLE)[i % 4].format(s=i % 60, i=i)
        lines.append(LogLine(text, 1.8e9 + (i * 7919) % 500))  # not in order
    _check_outside([lines[start : start + 64] for start in range(0, 600, 64)])


@pytest.mark.parametrize(
    "odd",
    [
        LogLine(ACCESS.format(i=1), None),
        "a str line " + ACCESS.format(i=2),
        LogLine(POLL_STATS.format(s=1, i=3), float("nan")),
        LogLine("x" * 70_000 + POLL_STATS.format(s=1, i=4), 1.8e9 + 5),
    ],
)
def test_a_batch_the_loop_must_read(odd: LogLine | str) -> None:
    head = [LogLine(POLL_STATS.format(s=i, i=i), 1.8e9 + i) for i in range(10)]
    tail = [LogLine(ACCESS.format(i=i), 1.8e9 + 20 + i) for i in range(5)]
    _check_outside([head, [*head, odd, *tail], tail, [odd], head])


def test_batches_without_stats_only_move_the_clock() -> None:
    tracker = LoadTracker(year=2026)
    tracker.feed_many([LogLine(ACCESS.format(i=i), 1.8e9 + i) for i in range(100)])
    assert tracker._last_t == 1.8e9 + 99 and tracker._stats is None
    tracker.feed_many([LogLine(ACCESS.format(i=1), 1.7e9)])
    assert tracker._last_t == 1.8e9 + 99


_TEXT = st.sampled_from([POLL_STATS, DECODE, ACCESS, UNREADABLE]).map(
    lambda template: template.format(s=7, i=3)
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(st.tuples(_TEXT, st.integers(0, 50)), max_size=8).map(
            lambda batch: [LogLine(text, 1.8e9 + t) for text, t in batch]
        ),
        max_size=6,
    )
)
def test_generated_batches(batches: list[list[LogLine | str]]) -> None:
    _check_outside(batches)


REQUEST = '(APIServer pid=2000) INFO:     127.0.0.1:{i} - "POST /v1/completions HTTP/1.1" 200 OK'
TRAPS = [
    "",
    "   ",
    " " * 5000 + "ERROR after a long blank head",
    "(Worker pid=1) ERROR 11-29 10:00:00 [x.py:1] stated error",
    "no level at all but CUDA out of memory",
    "no level, RuntimeError: boom",
    "(Worker pid=1) WARNING 11-29 10:00:00 [x.py:1] RuntimeError: only a warning",
    "INFO:     AssertionError in an info line",
    "E1129 10:00:00.000 glog error",
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in <module>',
    "ValueError: inside the traceback",
    "(APIServer pid=2000) INFO 11-29 10:00:01 [x.py:1] after the traceback",
    "SGLang Decode batch. #running-req: 3, token usage: 0.25, gen throughput (token/s): 9.5, "
    "#queue-req: 1",
    "tqdm 50%\r Completed 1/2 | 1/2 [00:01<00:01]\r",
    "x" * 70_000,
    "Killed",
]
NEW_LOAD = [
    "(APIServer pid=3000) INFO 11-29 10:05:00 [api_server.py:1] vLLM API server version 0.32.0",
    *[REQUEST.format(i=i) for i in range(30)],
    "(Worker pid=3001) ERROR 11-29 10:05:09 [x.py:1] RuntimeError: the new load fails",
]


def flood(count: int, offset: int = 0) -> list[str]:
    out = []
    for i in range(offset, offset + count):
        out.append(STATS.format(s=i % 60, i=i) if i % 2 else REQUEST.format(i=i))
    return out


def as_lines(texts: list[str], every_nth_without_time: int = 0) -> list[LogLine]:
    classifier = LevelClassifier()
    out = []
    for index, text in enumerate(texts):
        bare = every_nth_without_time and index % every_nth_without_time == 0
        out.append(
            LogLine(text, None if bare else 1.8e9 + index // 4, None, classifier.classify(text))
        )
    return out


def same_state(one: LoadTracker, many: LoadTracker) -> None:
    assert many.snapshot(now_s=2e9) == one.snapshot(now_s=2e9)
    assert list(many._recent) == list(one._recent)
    assert many._in_traceback == one._in_traceback
    assert many._last_error == one._last_error
    assert many._stats == one._stats
    assert many._last_t == one._last_t


def started_pair() -> tuple[LoadTracker, LoadTracker]:
    load = as_lines(captured_lines())
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    for line in load:
        one.apply(line)
    many.feed_many(load)
    assert one._load_started is not None
    same_state(one, many)
    return one, many


@pytest.mark.parametrize("bare", [0, 7])
@pytest.mark.parametrize("size", [1, 3, 16, 250, 100_000])
def test_started_batches_keep_the_state_of_line_by_line(size: int, bare: int) -> None:
    texts = [*flood(60), *TRAPS, *flood(40, 60), *TRICKY_LEVEL_LINES, *flood(30, 100)]
    texts += [*NEW_LOAD, *flood(25, 200), *TRAPS]
    lines = as_lines(texts, bare)
    one, many = started_pair()
    for start in range(0, len(lines), size):
        chunk = lines[start : start + size]
        for line in chunk:
            one.apply(line)
        many.feed_many(chunk)
        same_state(one, many)
    assert one.snapshot(now_s=2e9).failure_line is not None  # the new load failed
    assert len(one.snapshot(now_s=2e9).failure_context) > 5  # with its recent context


def test_plain_strings_mixed_in_take_feed() -> None:
    one, many = started_pair()
    chunk: list[LogLine | str] = [*as_lines(flood(10)), "bare ERROR string", *as_lines(TRAPS)]
    for line in chunk:
        one.apply(line)
    many.feed_many(chunk)
    same_state(one, many)


PIECES = (
    "(Worker pid=1) ",
    "INFO ",
    "WARNING ",
    "ERROR ",
    "CRITICAL ",
    "11-29 10:00:00 ",
    "[x.py:1] ",
    "INFO:  ",
    "E1129 10:00:00.000 ",
    "ValueError: ",
    "RuntimeError: ",
    "CUDA out of memory",
    "Killed",
    "Traceback (most recent call last):",
    "  ",
    "Avg prompt throughput: ",
    "Decode batch.",
    "Maximum concurrency for ",
    "Shutting down",
    "version",
    "\r",
    "word ",
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.sampled_from(PIECES), max_size=6).map("".join), max_size=30),
    st.integers(1, 12),
    st.sampled_from(["INFO", "WARNING", "ERROR"]),
)
def test_property_started_batches_match_feed(texts: list[str], size: int, level: str) -> None:
    classifier = LevelClassifier()
    lines = [
        LogLine(text, 1.8e9 + index, None, level if index % 3 == 0 else classifier.classify(text))
        for index, text in enumerate(texts)
    ]
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    start_load = LogLine(
        "(APIServer pid=1) INFO 11-29 10:00:00 [a.py:1] vLLM API server version 0.32.0", 1.8e9
    )
    one.apply(start_load)
    many.feed_many([start_load])
    for start in range(0, len(lines), size):
        chunk = lines[start : start + size]
        for line in chunk:
            one.apply(line)
        many.feed_many(chunk)
        same_state(one, many)


def tracker_lines(with_times: bool) -> list[LogLine]:
    lines = [*mixed_lines(), "tqdm 50%\r Completed 1/2 | 1/2 [00:01<00:01]\r"]
    lines += [STATS.format(s=1, i=999), STATS.format(s=2, i=7).replace("Running", "Runn")]
    out = []
    for index, text in enumerate(lines):
        stamp = 1.8e9 + index // 3 if with_times or index % 5 else None
        out.append(LogLine(text, stamp, None, LevelClassifier().classify(text)))
    return out


@pytest.mark.parametrize("with_times", [True, False])
@pytest.mark.parametrize("size", [1, 5, 64, 100_000])
def test_load_tracker_batches_end_where_line_by_line_ends(size: int, with_times: bool) -> None:
    lines = tracker_lines(with_times)
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    for start in range(0, len(lines), size):
        chunk = lines[start : start + size]
        for line in chunk:
            one.apply(line)
        many.feed_many(chunk)
        assert many._stats == one._stats
        assert many._last_t == one._last_t
        assert many.snapshot(now_s=2e9) == one.snapshot(now_s=2e9)


def test_load_tracker_batch_without_a_load_keeps_the_newest_stats() -> None:
    flood = [LogLine(STATS.format(s=i % 60, i=i), 1.8e9 + i) for i in range(500)]
    flood.append(LogLine("Avg prompt throughput: unreadable", 1.8e9 + 600))
    tracker = LoadTracker(year=2026)
    tracker.feed_many(flood)
    assert tracker.phase == LoadTracker().phase
    assert tracker._stats is not None and tracker._stats.running_reqs == 499
    assert tracker._last_t == 1.8e9 + 600


@pytest.mark.parametrize("size", [1, 7, 2000])
def test_fact_lines_in_batches_end_where_line_by_line_ends(size: int) -> None:
    lines = tracker_lines(True) + [
        LogLine(text, 1.9e9 + index) for index, text in enumerate(FACT_SAMPLES)
    ]
    lines += tracker_lines(False)
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    for start in range(0, len(lines), size):
        chunk = lines[start : start + size]
        for line in chunk:
            one.apply(line)
        many.feed_many(chunk)
        assert many.snapshot(now_s=2e9) == one.snapshot(now_s=2e9)
