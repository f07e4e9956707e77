"""read_lines pairs each text with its level: a read whose counts differ is refused (never
cut short or padded), and classify_many's levels build the lines one by one would."""

from __future__ import annotations

import pytest

from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine, read_lines


def test_texts_and_levels_of_different_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        read_lines(["a", "b"], ["INFO"], 1.0, "file:x")


def test_an_empty_read_makes_no_lines() -> None:
    assert read_lines([], [], 1.0, "file:x") == []


def test_a_read_of_mixed_lines_is_classified_and_built_as_one_by_one() -> None:
    texts = [
        "(APIServer pid=1) WARNING 11-29 10:00:00 [x.py:1] slow",
        '(APIServer pid=1) INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK',
        "ERROR: boom",
        "(Worker pid=2) ERROR 11-29 10:00:01 [x.py:2] failed",
        "RuntimeError: CUDA error: out of memory",
        "plain",
    ]
    one = LevelClassifier()
    expected = [LogLine(text, 2.0, None, one.classify(text), None, "f") for text in texts]
    levels = LevelClassifier().classify_many(texts)
    assert read_lines(texts, levels, 2.0, "f") == expected
    assert [line.level for line in expected] == [
        "WARNING",
        "INFO",
        "ERROR",
        "ERROR",
        "ERROR",
        "INFO",
    ]
