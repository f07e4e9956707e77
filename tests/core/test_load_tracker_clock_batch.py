"""Outside a load, feed_many moves the clock and reads the newest stats line per batch
(issue 18) and ends where feed line by line ends: clocks that go back, stats lines that
do not read as stats, SGLang decode lines, a batch without stats, lines without a time or
given as str (the per-line loop then), NaN and huge lines."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.logs.line import LogLine
from tui.serving.load.tracker import LoadTracker

STATS = (
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


def _check(batches: list[list[LogLine | str]]) -> None:
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    for batch in batches:
        for line in batch:
            one.feed(line)
        many.feed_many(batch)
        # repr: a NaN clock equals itself there
        assert repr(many._stats) == repr(one._stats)
        assert repr(many._last_t) == repr(one._last_t)
        assert repr(many.snapshot(now_s=2e9)) == repr(one.snapshot(now_s=2e9))


def test_a_flood_with_clocks_going_back() -> None:
    lines: list[LogLine | str] = []
    for i in range(600):
        text = (STATS, ACCESS, DECODE, UNREADABLE)[i % 4].format(s=i % 60, i=i)
        lines.append(LogLine(text, 1.8e9 + (i * 7919) % 500))  # not in order
    _check([lines[start : start + 64] for start in range(0, 600, 64)])


@pytest.mark.parametrize(
    "odd",
    [
        LogLine(ACCESS.format(i=1), None),
        "a str line " + ACCESS.format(i=2),
        LogLine(STATS.format(s=1, i=3), float("nan")),
        LogLine("x" * 70_000 + STATS.format(s=1, i=4), 1.8e9 + 5),
    ],
)
def test_a_batch_the_loop_must_read(odd: LogLine | str) -> None:
    head = [LogLine(STATS.format(s=i, i=i), 1.8e9 + i) for i in range(10)]
    tail = [LogLine(ACCESS.format(i=i), 1.8e9 + 20 + i) for i in range(5)]
    _check([head, [*head, odd, *tail], tail, [odd], head])


def test_batches_without_stats_only_move_the_clock() -> None:
    tracker = LoadTracker(year=2026)
    tracker.feed_many([LogLine(ACCESS.format(i=i), 1.8e9 + i) for i in range(100)])
    assert tracker._last_t == 1.8e9 + 99 and tracker._stats is None
    tracker.feed_many([LogLine(ACCESS.format(i=1), 1.7e9)])
    assert tracker._last_t == 1.8e9 + 99


_TEXT = st.sampled_from([STATS, DECODE, ACCESS, UNREADABLE]).map(
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
    _check(batches)
