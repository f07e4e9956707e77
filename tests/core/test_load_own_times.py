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

from tests.support.log_samples import FIXTURES
from tui.logs.line import LevelClassifier, LineBatch, LogLine
from tui.serving.load_eta import phase_durations
from tui.serving.load_explain import LoadExplainer, record_load
from tui.serving.loadwatch import LoadTracker, Phase

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
            tracker.feed(line)
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
