"""A read's lines kept as columns (LineBatch) answer as the LogLines they stand for.

The file follower yields a flood's reads as LineBatches, so no stage builds a LogLine per
line; every stage that reads a batch's columns must see what it would see in the lines.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import pytest

from tests.support.log_samples import STATS, TRICKY_LEVEL_LINES, captured_lines
from tui.logs.classify import LevelClassifier
from tui.logs.line import LineBatch, LineQueue, LogLine, read_lines, texts_of, warnings_or_worse
from tui.serving.load.tracker import LoadTracker
from tui.serving.unit.restart_loop import RestartLoopDetector


def texts() -> list[str]:
    flood = [STATS.format(s=i % 60, i=i) for i in range(40)]
    return [*flood, *TRICKY_LEVEL_LINES, *captured_lines(), *flood]


def batches(size: int, start_s: float = 1.8e9) -> list[LineBatch]:
    """The texts as the follower reads them: `size` lines a read, one time a read."""
    lines, classifier = texts(), LevelClassifier()
    out = []
    for index, start in enumerate(range(0, len(lines), size)):
        chunk = lines[start : start + size]
        out.append(LineBatch(chunk, classifier.classify_many(chunk), start_s + index, "file:x"))
    return out


def test_a_batch_reads_as_its_lines() -> None:
    (batch,) = batches(100_000)
    lines = read_lines(batch.texts, batch.levels, batch.timestamp_s, batch.source)
    assert list(batch) == lines and len(batch) == len(lines)
    assert [batch[i] for i in (0, 5, -1)] == [lines[0], lines[5], lines[-1]]
    assert list(batch[3:9]) == lines[3:9] and isinstance(batch[3:9], LineBatch)
    assert list(batch.entries()) == [dataclasses.astuple(line) for line in lines]
    assert batch.timestamps_s() == [line.timestamp_s for line in lines]
    assert texts_of(batch) == texts_of(lines) == [line.text for line in lines]
    assert warnings_or_worse(batch) == warnings_or_worse(lines)
    assert warnings_or_worse(lines), "the sample holds warnings and errors"
    with pytest.raises(ValueError, match="2 texts but 1 levels"):
        LineBatch(["a", "b"], ["INFO"])


def test_the_queue_gives_the_lines_in_order_keeping_batches_and_joining_lists() -> None:
    queue = LineQueue()
    singles = [[LogLine(f"remote {i}")] for i in range(3)]  # a remote tail: a line a batch
    batch = LineBatch(["a", "b", "c", "d"], ["INFO"] * 4, 5.0, "file:x")
    for piece in (*singles, batch, [LogLine("after")]):
        queue.add(piece)
    queue.add([])
    everything = [*(line for single in singles for line in single), *batch, LogLine("after")]
    assert len(queue) == 8 and list(queue) == everything
    first = queue.take(5)
    assert [type(piece) for piece in first] == [list, LineBatch]
    assert [line for piece in first for line in piece] == everything[:5]
    assert len(queue) == 3
    rest = queue.take(100)
    assert [line for piece in rest for line in piece] == everything[5:]
    assert len(queue) == 0 and not queue and queue.take(10) == []


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
def test_load_tracker_and_restart_watch_take_batches_as_their_lines(size: int) -> None:
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    by_line, by_batch = RestartLoopDetector("u"), RestartLoopDetector("u")
    for batch in batches(size):
        for line in batch:
            one.apply(line)
        by_line.feed([line.text for line in batch])
        many.feed_many(batch)
        by_batch.feed(texts_of(batch))
        assert many._stats == one._stats and many._last_t == one._last_t
        assert list(many._recent) == list(one._recent)
        assert many.snapshot(now_s=2e9) == one.snapshot(now_s=2e9)
    assert by_batch.evidence() == by_line.evidence()


def _after_load_flood() -> list[str]:
    """Serving after a load: stats, requests, warnings; and now and then a line that must
    take the tracker's full reading (an error, a FATAL literal, a glog error, a `\r`)."""
    lines = []
    for i in range(3000):
        lines.append(STATS.format(s=i % 60, i=i))
        lines.append(f'(APIServer pid=2000) INFO:     127.0.0.1:{i} - "POST /v1/completions" 200')
        lines.append(f"(Worker_TP1 pid=2104) WARNING 11-29 10:00:{i % 60:02d} [x.py:1] slow {i}")
        if i % 97 == 0:
            lines.append("")
        if i % 500 == 250:
            lines += [
                "(Worker_TP0 pid=2103) ERROR 11-29 10:00:01 [core.py:1] RuntimeError: boom",
                "E1129 10:00:02.000 glog error line",
                "Killed",
                "progress 10%\r progress 20%",
            ]
    return lines


@pytest.mark.parametrize("size", [1, 3, 50, 777, 2000])
def test_the_tracker_after_a_load_takes_plain_batches_as_their_lines(size: int) -> None:
    captured = captured_lines()
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    start = [LogLine(text, 1.8e9) for text in captured]
    for line in start:
        one.apply(line)
    many.feed_many(start)
    assert one._load_started is not None and many._load_started is not None
    flood, classifier = _after_load_flood(), LevelClassifier()
    for index, begin in enumerate(range(0, len(flood), size)):
        chunk = flood[begin : begin + size]
        batch = LineBatch(chunk, classifier.classify_many(chunk), 1.8e9 + 100 + index, "f")
        for line in batch:
            one.apply(line)
        many.feed_many(batch)
        assert many._stats == one._stats and many._last_t == one._last_t
        assert list(many._recent) == list(one._recent)
    assert many.snapshot(now_s=2e9) == one.snapshot(now_s=2e9)


def _recorded(lines: Sequence[LogLine], started_s: float, now_s: float) -> list[object]:
    """What the console hands the recorder for one drained batch."""
    from tui.app.console_record import BACKLOG_S, recorded_lines

    assert 1 < BACKLOG_S < 3600  # one second in: not settled; an hour in: settled
    return list(recorded_lines(lines, started_s, now_s))


@pytest.mark.parametrize("settled", [False, True])
def test_the_recorder_is_handed_the_same_warnings_from_a_batch(settled: bool) -> None:
    stamp = "(Worker pid=2) {level} 11-29 10:{minute:02d}:00 [x.py:1] slow step"
    texts = [
        stamp.format(level=level, minute=minute)
        for level in ("INFO", "WARNING", "ERROR")
        for minute in (0, 30, 59)
    ] + ["Traceback-free WARNING without a clock", "plain ERROR line", "INFO: access"]
    batch = LineBatch(texts, LevelClassifier().classify_many(texts), 1.8e9, "file:x")
    started_s = time.mktime((time.localtime().tm_year, 11, 29, 10, 30, 0, 0, 0, -1))
    now_s = started_s + (3600 if settled else 1)
    from_batch = _recorded(batch, started_s, now_s)
    assert from_batch == _recorded(list(batch), started_s, now_s)
    kept = {line.text for line, _ in from_batch}  # type: ignore[attr-defined]
    assert stamp.format(level="ERROR", minute=59) in kept  # after the start: new
    assert stamp.format(level="WARNING", minute=0) not in kept  # the backlog shown at start
    assert ("plain ERROR line" in kept) is settled  # no clock: new only once settled
