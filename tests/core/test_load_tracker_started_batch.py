"""The load tracker's batch path once a load has started answers as line by line (issue 18).

After a load, feed_many reads a plain line (no fact word, no `\\r`, no error, no
traceback) as a clock tick, a recent-context line and maybe a stats line, and hands every
other line to `feed`. Checked after each chunk on everything `feed` keeps: the snapshot,
the recent context a later failure quotes, the traceback state, the last error.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import STATS, TRICKY_LEVEL_LINES, captured_lines
from tui.logs.line import LevelClassifier, LogLine
from tui.serving.load.tracker import LoadTracker

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
        one.feed(line)
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
            one.feed(line)
        many.feed_many(chunk)
        same_state(one, many)
    assert one.snapshot(now_s=2e9).failure_line is not None  # the new load failed
    assert len(one.snapshot(now_s=2e9).failure_context) > 5  # with its recent context


def test_plain_strings_mixed_in_take_feed() -> None:
    one, many = started_pair()
    chunk: list[LogLine | str] = [*as_lines(flood(10)), "bare ERROR string", *as_lines(TRAPS)]
    for line in chunk:
        one.feed(line)
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
    one.feed(start_load)
    many.feed_many([start_load])
    for start in range(0, len(lines), size):
        chunk = lines[start : start + size]
        for line in chunk:
            one.feed(line)
        many.feed_many(chunk)
        same_state(one, many)
