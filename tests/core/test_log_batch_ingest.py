"""Log lines taken a chunk at a time answer exactly as line by line (issue 18).

The file follower decodes, splits and classifies a whole read chunk; the load tracker
and the restart-loop watch take a batch and skip what cannot matter. Each batch path is
checked against the line-by-line one on the captured vLLM logs, cut into chunks of many
sizes, with the traps that need the full reading: a traceback across a chunk edge,
escapes, broken UTF-8, CRLF, lines without a time, a load starting amid stats lines.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import STATS, TRICKY_LEVEL_LINES, captured_lines
from tui.logs.line import LevelClassifier, LogLine, read_lines, warnings_or_worse
from tui.logs.tail import FileFollower
from tui.serving import loadpatterns as patterns
from tui.serving.loadwatch import _FACT_WORDS, LoadTracker
from tui.serving.unit.restart_loop import RestartLoopDetector


def mixed_lines() -> list[str]:
    """Captured logs with stats floods and the tricky lines between them."""
    flood = [STATS.format(s=i % 60, i=i) for i in range(40)]
    return [*flood, *TRICKY_LEVEL_LINES, *captured_lines(), *flood, *TRICKY_LEVEL_LINES, *flood]


def chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 100_000])
def test_classify_many_reads_the_levels_classify_reads(size: int) -> None:
    lines = mixed_lines()
    one, many = LevelClassifier(), LevelClassifier()
    expected = [one.classify(text) for text in lines]
    got = [level for chunk in chunks(lines, size) for level in many.classify_many(chunk)]
    assert got == expected


PIECES = (
    "(Worker pid=1) ",
    "INFO ",
    "WARNING ",
    "ERROR ",
    "11-29 10:00:00 ",
    "[x.py:1] ",
    "INFO:  ",
    "x.py:9: ",
    "UserWarning: ",
    "Warning: ",
    "ValueError",
    "Exception",
    "SystemExit",
    "KeyboardInterrupt",
    ": ",
    "FATAL",
    "Fatal ",
    "out of memory",
    "OUT OF MEMORY",
    "cuda error",
    "\u017fegmentation fault",  # long s: case-insensitively an s
    "segmentation fault",
    "core dumped",
    "Traceback (most recent call last):",
    "  ",
    "\x1b[31m",
    "\n",
    "word ",
    "\u00e9",
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), max_size=12))
def test_classify_many_matches_classify_on_generated_chunks(chunk: list[str]) -> None:
    texts = [text.replace("\n", " ") for text in chunk]
    one, many = LevelClassifier(), LevelClassifier()
    assert many.classify_many(texts) == [one.classify(text) for text in texts]
    assert many.classify_many(texts) == [one.classify(text) for text in texts]


def test_file_follower_chunks_give_the_lines_and_levels_of_line_by_line(
    tmp_path: Path,
) -> None:
    raw_lines = [text.encode() for text in mixed_lines()]
    raw_lines += [b"broken \xe2\x82", b"\xac after a cut sequence", b"crlf line\r", b"\xff\xfe"]
    path = tmp_path / "service.log"
    path.write_bytes(b"\n".join(raw_lines) + b"\n")

    async def read() -> list[LogLine]:
        follower = FileFollower(str(path), initial_lines=len(raw_lines), follow=False)
        return [line async for line in follower.lines()]

    got = asyncio.run(read())
    classifier = LevelClassifier()
    texts = [raw.decode("utf-8", errors="replace").rstrip("\r\n") for raw in raw_lines]
    assert [line.text for line in got] == texts
    assert [line.level for line in got] == [classifier.classify(text) for text in texts]
    assert all(line.source == f"file:{path}" and line.timestamp_s for line in got)


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
            one.feed(line)
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


@pytest.mark.parametrize("size", [1, 3, 64, 100_000])
def test_restart_watch_batches_keep_the_evidence_of_line_by_line(size: int) -> None:
    lines = [
        *mixed_lines(),
        "ERROR [Errno 98] Address already in use",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "ΚΕΛΒΙΝ non-ASCII chunk, then free memory on device (1.0/2.0 GiB) is less than",
        *captured_lines()[:50],
    ]
    one, many = RestartLoopDetector("u"), RestartLoopDetector("u")
    for chunk in chunks(lines, size):
        for text in chunk:
            one.feed([text])
        many.feed(text for text in chunk)
        assert many.evidence() == one.evidence()
    assert one.evidence() == ("out of memory", lines[-52].strip())


def test_read_lines_are_the_lines_the_dataclass_builds() -> None:
    assert [field.name for field in dataclasses.fields(LogLine)] == [
        "text",
        "timestamp_s",
        "cursor",
        "level",
        "priority",
        "source",
    ]  # read_lines sets each of these: a new field must be set there too
    texts, levels = ["a", "", "c\u00e9"], ["INFO", "WARNING", "ERROR"]
    built = read_lines(texts, levels, 1.5, "file:x")
    assert built == [
        LogLine(t, 1.5, None, lv, None, "file:x") for t, lv in zip(texts, levels, strict=True)
    ]
    assert hash(built[0]) == hash(LogLine("a", 1.5, None, "INFO", None, "file:x"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built[0].text = "changed"  # type: ignore[misc]
    assert warnings_or_worse(built) == built[1:]
    assert warnings_or_worse([LogLine("x", level="NOTICE"), LogLine("y", level="DEBUG")]) == []


FACT_SAMPLES = [
    "vLLM API server version 0.32.0, serving model m/x",
    "\u2588 \u2588 version 0.3 \u2588 model m",
    "Initializing a V1 LLM engine (v0.32) with config: model='m'",
    "server_args=ServerArgs(model_path='m'",
    "Starting to load model m...",
    "Load weight begin",
    "Loading safetensors checkpoint shards: 50% Completed | 1/2 [00:01<00:01",
    "Loading weights took 1.5 seconds",
    "Model loading took 1.2 GiB and 3.4 seconds",
    "Loading model weights took 14.9888 GB",
    "Load weight end. type=x, mem usage=1.5 GB",
    "torch.compile takes 3.2 s in total",
    "torch.compile took 3 s",
    "Warming up model for the compilation",
    "Dynamo bytecode transform time",
    "Compiling a graph for dynamic shape",
    "Compiling model again",
    "Start compiling",
    "Available KV cache memory: 1.5 GiB",
    "Explicitly set (1.0/2.0) GiB for KV cache",
    "GPU KV cache size: 1,000 tokens",
    "Maximum concurrency for 1,000 tokens per request: 2.5x",
    "Memory pool end",
    "KV Cache is allocated. #tokens: 100",
    "max_total_num_tokens=1000",
    "init engine (profile, create kv cache, warmup model) took 3.0",
    "Graph capturing finished in 5 secs, took 0.5 GiB",
    "Capture cuda graph end. Time elapsed: 3.1 s. mem usage=0.2 GB",
    "Capturing CUDA graphs",
    "Capture CUDA graph begin",
    "Starting vLLM API server on http://x",
    "Uvicorn running on http://x",
    "Application startup complete.",
    "The server is fired up and ready to roll!",
    "[shutdown]",
    "Shutting down",
    "shutdown triggered",
    "Received SIGTERM",
    "Gracefully stopping",
]
FACT_PIECES = [
    *FACT_SAMPLES,
    *(sample[: len(sample) // 2] for sample in FACT_SAMPLES),
    *(sample[len(sample) // 2 :] for sample in FACT_SAMPLES),
    " ",
    "x",
    "1",
    "\u2588",
]


def fact_patterns() -> list[re.Pattern[str]]:
    """Every pattern _facts_and_phase tries, read from its source (a new one is seen)."""
    source = inspect.getsource(LoadTracker._facts_and_phase)
    names = sorted(set(re.findall(r"\bp\.([A-Z_]+)\.search", source)))
    assert len(names) >= 23
    return [getattr(patterns, name) for name in names]


def test_fact_words_hold_for_each_pattern_sample() -> None:
    compiled = fact_patterns()
    for pattern in compiled:
        assert any(pattern.search(sample) for sample in FACT_SAMPLES), pattern.pattern
    for sample in FACT_SAMPLES:
        assert any(word in sample for word in _FACT_WORDS), sample


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FACT_PIECES), max_size=10).map("".join))
def test_a_fact_pattern_matches_only_where_a_fact_word_is(text: str) -> None:
    if any(pattern.search(text) for pattern in fact_patterns()):
        assert any(word in text for word in _FACT_WORDS), text


def test_fact_words_hold_on_captured_logs() -> None:
    compiled = fact_patterns()
    matched = 0
    for text in captured_lines():
        if any(pattern.search(text) for pattern in compiled):
            matched += 1
            assert any(word in text for word in _FACT_WORDS), text
    assert matched >= 10


@pytest.mark.parametrize("size", [1, 7, 2000])
def test_gated_batches_end_where_the_ungated_tracker_ends(size: int) -> None:
    lines = tracker_lines(True) + [
        LogLine(text, 1.9e9 + index) for index, text in enumerate(FACT_SAMPLES)
    ]
    lines += tracker_lines(False)
    ungated, gated = LoadTracker(year=2026), LoadTracker(year=2026)
    ungated._fact_words = ("",)  # "" is in every text: every pattern is tried
    for start in range(0, len(lines), size):
        chunk = lines[start : start + size]
        for line in chunk:
            ungated.feed(line)
        gated.feed_many(chunk)
        assert gated.snapshot(now_s=2e9) == ungated.snapshot(now_s=2e9)
        assert gated._fact_words == _FACT_WORDS
