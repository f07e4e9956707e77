"""Load progress on odd logs (issue 36): old vLLM's weights line, and a log silent for days."""

from __future__ import annotations

import pytest

from tui.logs.line import LevelClassifier, LineBatch, LogLine
from tui.serving.loadwatch import LoadTracker, Phase

OLD_VLLM = [
    "INFO 06-10 10:00:00 [api_server.py:149] vLLM API server version 0.5.4",
    "INFO 06-10 10:00:02 [llm_engine.py:174] Initializing an LLM engine (v0.5.4) with config: "
    "model='meta-llama/Meta-Llama-3-8B-Instruct'",
    "INFO 06-10 10:00:05 [model_runner.py:720] Starting to load model meta-llama/Meta-Llama-3-8B",
    "INFO 06-10 10:00:09 [model_runner.py:732] Loading model weights took 14.9888 GB",
]


def _lines(texts: list[str], t0: float = 1.8e9) -> list[LogLine]:
    classifier = LevelClassifier()
    return [LogLine(text, t0 + i, None, classifier.classify(text)) for i, text in enumerate(texts)]


def _old_vllm_checks(tracker: LoadTracker) -> None:
    progress = tracker.snapshot(now_s=1.8e9 + 10)
    assert progress.phase == Phase.KV_CACHE
    assert progress.facts.weights_gib == pytest.approx(14.9888)
    assert [span.phase for span in progress.timeline][-2:] == ["weights", "kv_cache"]
    assert progress.eta_s is None  # the weights are done: no weights ETA


def test_old_vllm_weights_line_enters_kv_cache_line_by_line() -> None:
    tracker = LoadTracker(year=2026)
    for line in _lines(OLD_VLLM):
        tracker.feed(line)
    _old_vllm_checks(tracker)


@pytest.mark.parametrize("split", [1, 3])
def test_old_vllm_weights_line_enters_kv_cache_in_batches(split: int) -> None:
    """feed_many's batch routes: the head starts the load, the rest is read as a batch of
    LogLines (after a start) and as a LineBatch (the file follower's columns)."""
    lines = _lines(OLD_VLLM)
    for rest in (
        lines[split:],
        LineBatch(OLD_VLLM[split:], [line.level for line in lines[split:]], 1.8e9 + 3),
    ):
        tracker = LoadTracker(year=2026)
        tracker.feed_many(lines[:split])
        tracker.feed_many(rest)
        _old_vllm_checks(tracker)
