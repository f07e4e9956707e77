"""Log lines taken a chunk at a time answer exactly as line by line (issue 18).

The file follower decodes, splits and classifies a whole read chunk; the restart-loop
watch takes a batch and skips what cannot matter (the load tracker's batches:
tests/core/test_load_feed_many.py). Each batch path is
checked against the line-by-line one on the captured vLLM logs, cut into chunks of many
sizes, with the traps that need the full reading: a traceback across a chunk edge,
escapes, broken UTF-8, CRLF, lines without a time, a load starting amid stats lines.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import STATS, TRICKY_LEVEL_LINES, captured_lines
from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine, read_lines, warnings_or_worse
from tui.logs.tail import FileFollower
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
