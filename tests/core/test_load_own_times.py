"""Phase times come from the times the lines were logged, not from when they were read.

Issue 34: lines held back by an SSH outage arrived together and loads.jsonl kept a 128 s
load for a 118 s one (compile 28.8 s, KV cache and CUDA graphs 0 s): a file tail stamps
each line with its read time, and the tracker took that over the vLLM prefix. A real
load's log (the captured vLLM 0.32 start, restamped to end just before now) is fed as
the reads a console would get; the spans, the loads.jsonl entry and the ETA history must
hold the logged durations, through the batch route and line by line.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import FIXTURES
from tui.logs.classify import LevelClassifier
from tui.logs.line import LineBatch, LogLine
from tui.serving.load.eta import phase_durations
from tui.serving.load.explain import LoadExplainer
from tui.serving.load.history import record_load
from tui.serving.load.tracker import LoadTracker, Phase, prefix_time_near_s

_STAMP = re.compile(r"\b(\d\d-\d\d \d\d:\d\d:\d\d)\s")
# The captured start's phases as its prefixes time them: 16:31:28 version banner,
# :39 "Starting to load model", :40 "Warming up model for the compilation",
# :55 "Explicitly set ... GiB for KV cache", :58 "Starting vLLM server".
LOGGED_S = {"starting": 11.0, "weights": 1.0, "compile": 15.0, "kv_cache": 3.0}
SERVING_AFTER_S = sum(LOGGED_S.values())
HELD_BACK_S = 10.0  # the outage: the rest of the load is read this long after it was logged


def _load_log(ends_at_s: float) -> list[tuple[str, float | None]]:
    """server.log up to ready, each line with its prefix time moved so the server starts
    serving at `ends_at_s` (local time, as vLLM writes it); None for a bare line."""
    texts = (FIXTURES / "server.log").read_text().splitlines()
    texts = texts[: next(i for i, t in enumerate(texts) if "Application startup" in t) + 1]
    serving = next(t for t in texts if "Starting vLLM server" in t)
    shift = ends_at_s - _epoch(_STAMP.search(serving).group(1))  # type: ignore[union-attr]
    out: list[tuple[str, float | None]] = []
    for text in texts:
        found = _STAMP.search(text[:80])
        if found is None:
            out.append((text, None))
            continue
        at_s = _epoch(found.group(1)) + shift
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(at_s))
        out.append((text.replace(found.group(1), stamp, 1), at_s))
    return out


def _epoch(stamp: str) -> float:
    return datetime.strptime(f"2026-{stamp}", "%Y-%m-%d %H:%M:%S").timestamp()


def _reads_whole(log: list[tuple[str, float | None]], now_s: float) -> list[LineBatch]:
    """The whole load in one read, as a tail started after it (or catching up) gets it."""
    texts = [text for text, _ in log]
    return [LineBatch(texts, LevelClassifier().classify_many(texts), now_s, "file:server.log")]


def _reads_after_outage(log: list[tuple[str, float | None]], now_s: float) -> list[LineBatch]:
    """Read as logged until the compile starts; the rest held back and read in one go."""
    classifier = LevelClassifier()
    cut = next(i for i, (text, _) in enumerate(log) if "Warming up model" in text)
    reads: list[LineBatch] = []
    live: dict[float, list[str]] = {}
    last_s = log[0][1] or now_s
    for text, at_s in log[:cut]:
        last_s = at_s if at_s is not None else last_s
        live.setdefault(last_s + 0.3, []).append(text)
    for read_s, texts in live.items():
        reads.append(LineBatch(texts, classifier.classify_many(texts), read_s, "file:server.log"))
    rest = [text for text, _ in log[cut:]]
    reads.append(LineBatch(rest, classifier.classify_many(rest), now_s, "file:server.log"))
    return reads


def _batch_route(reads: list[LineBatch]) -> LoadTracker:
    tracker = LoadTracker()
    for read in reads:
        tracker.feed_many(read)
    return tracker


def _line_route(reads: list[LineBatch]) -> LoadTracker:
    tracker = LoadTracker()
    for read in reads:
        for line in read:
            tracker.apply(line)
    return tracker


Reads = Callable[[list[tuple[str, float | None]], float], list[LineBatch]]


@pytest.mark.parametrize("reads", [_reads_whole, _reads_after_outage])
@pytest.mark.parametrize("route", [_batch_route, _line_route])
def test_phase_spans_are_the_logged_durations(
    reads: Reads, route: Callable[[list[LineBatch]], LoadTracker], tmp_path: Path
) -> None:
    now_s = time.time()
    serving_at_s = float(int(now_s - HELD_BACK_S))
    log = _load_log(serving_at_s)
    progress = route(reads(log, now_s)).snapshot(now_s=now_s)
    assert progress.phase == Phase.SERVING and progress.ready
    spans = {span.phase: span.duration_s for span in progress.timeline}
    assert {name: spans[name] for name in LOGGED_S} == LOGGED_S
    assert progress.timeline[0].started_at_s == serving_at_s - SERVING_AFTER_S
    assert progress.timeline[-1].started_at_s == serving_at_s
    # the ETA history of later loads
    assert {k: v for k, v in phase_durations(progress).items() if v} == LOGGED_S
    # the loads.jsonl entry
    history = tmp_path / "loads.jsonl"
    record_load("box", "tiny", LoadExplainer().explain(progress, first_answer_at_s=now_s), history)
    (entry,) = [json.loads(line) for line in history.read_text().splitlines()]
    assert {phase["name"]: phase["wall_s"] for phase in entry["phases"]} == LOGGED_S
    assert entry["wall_s"] == pytest.approx(SERVING_AFTER_S + (now_s - serving_at_s))


def test_a_bare_line_takes_the_own_time_of_its_read() -> None:
    """A traceback prints no time: it failed when the last stamped line of its read was
    logged, not when the read came (here 40 s later)."""
    now_s = time.time()
    logged_s = float(int(now_s - 40))
    stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(logged_s))
    texts = [
        f"(APIServer pid=1) INFO {stamp} [api_server.py:1] vLLM API server version 0.32.0",
        "Traceback (most recent call last):",
        "RuntimeError: Engine core initialization failed.",
    ]
    for route in (_batch_route, _line_route):
        read = LineBatch(texts, LevelClassifier().classify_many(texts), now_s, "file:x")
        progress = route([read]).snapshot(now_s=now_s)
        assert [(s.phase, s.started_at_s) for s in progress.timeline] == [
            ("starting", logged_s),
            ("failed", logged_s),
        ]


def test_journal_entries_keep_the_journals_time() -> None:
    """An entry (it has a cursor) was logged at its __REALTIME_TIMESTAMP, whatever its text."""
    tracker = LoadTracker()
    base_s = time.time() - 100
    lines = [
        ("(APIServer pid=1) INFO 01-01 00:00:00 [a.py:1] vLLM API server version 0.32.0", 0.0),
        ("(Worker pid=2) INFO 01-01 00:00:00 [b.py:1] Starting to load model /m...", 7.5),
    ]
    tracker.feed_many([LogLine(text, base_s + at_s, f"c{at_s}", "INFO") for text, at_s in lines])
    spans = tracker.snapshot(now_s=base_s + 10).timeline
    assert [(s.phase, s.started_at_s) for s in spans] == [
        ("starting", base_s),
        ("weights", base_s + 7.5),
    ]


# Lines for the generated reads: stamped or bare, plain (a batch path skips them) or read
# by `feed` (a load's start, a phase, a shard bar, a traceback, a bare error).
_POOL = (
    "(APIServer pid=1) INFO 11-29 10:{m:02d}:{s:02d} [a.py:1] plain line",
    'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK',
    "(APIServer pid=1) INFO 11-29 10:{m:02d}:{s:02d} [a.py:1] vLLM API server version 0.32.0",
    "(Worker pid=2) INFO 11-29 10:{m:02d}:{s:02d} [m.py:1] Starting to load model /m...",
    "Loading safetensors checkpoint shards:  50% Completed | {k}/8 [00:{s:02d}<00:09, 1.1s/it]",
    "(Worker pid=2) INFO 11-29 10:{m:02d}:{s:02d} [m.py:1] Warming up model for the compilation",
    "Traceback (most recent call last):",
    "RuntimeError: boom",
    "(APIServer pid=1) INFO 11-29 10:{m:02d}:{s:02d} [a.py:1] Starting vLLM server on http://h",
)
_LINE = st.builds(
    lambda template, m, s, k: template.format(m=m, s=s, k=k),
    st.sampled_from(_POOL),
    st.integers(0, 3),
    st.integers(0, 59),
    st.integers(1, 8),
)
# read times around the stamps' (2026-11-29 10:00 local): some before them (never after)
_READ_S = st.sampled_from([1.79e9, 1.7964e9, 1.8e9]).flatmap(
    lambda base: st.integers(0, 400).map(lambda extra: base + extra)
)
_READ = st.tuples(st.lists(_LINE, min_size=1, max_size=12), _READ_S, st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_READ, min_size=1, max_size=8))
def test_generated_reads_time_phases_as_line_by_line(
    reads: list[tuple[list[str], float, bool]],
) -> None:
    """feed_many times every event as `feed` line by line does: the lines a batch path
    skips still give a bare line of their read its own time."""
    one, many = LoadTracker(year=2026), LoadTracker(year=2026)
    classifier = LevelClassifier()
    for texts, read_s, as_batch in reads:
        levels = classifier.classify_many(texts)
        read: LineBatch | list[LogLine] = (
            LineBatch(texts, levels, read_s, "file:x")
            if as_batch
            else [LogLine(t, read_s, None, level) for t, level in zip(texts, levels, strict=True)]
        )
        for line in read:
            one.apply(line)
        many.feed_many(read)
        assert many.snapshot(now_s=2e9) == one.snapshot(now_s=2e9)
        assert many._own_last == one._own_last


def test_the_year_is_the_one_nearest_the_read_and_no_stamp_is_after_it() -> None:
    """A New Year's Eve line read after midnight was logged last year; a stamp later than
    its read (another time zone) says no more than the read time."""
    read_s = time.mktime((2027, 1, 1, 0, 0, 5, 0, 0, -1))
    last_year = "(APIServer pid=1) INFO 12-31 23:59:50 [a.py:1] vLLM API server version 0.32.0"
    assert prefix_time_near_s(last_year, read_s) == time.mktime(
        (2026, 12, 31, 23, 59, 50, 0, 0, -1)
    )
    later = "(APIServer pid=1) INFO 01-01 01:00:05 [a.py:1] vLLM API server version 0.32.0"
    assert prefix_time_near_s(later, read_s) == read_s
    assert prefix_time_near_s("no stamp here", read_s) is None
