"""Load progress on odd logs (issue 36): old vLLM's weights line, and a log silent for days."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tui.cli import main
from tui.logs.classify import LevelClassifier
from tui.logs.line import LineBatch, LogLine
from tui.logs.tail import FileFollower
from tui.serving.load.eta import DEFAULT_PHASE_S, PhasePlan, estimate_ready
from tui.serving.load.explain import LoadExplainer
from tui.serving.load.tracker import LoadTracker, Phase
from widgets.load_strip import render_strip

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
        tracker.apply(line)
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


TWO_DAYS_S = 2 * 86400


def _stale_log(tmp_path: Path) -> Path:
    """A load that stopped mid-weights two days ago: line times and mtime two days old."""
    start = time.time() - TWO_DAYS_S - 60
    stamp = lambda s: time.strftime("%m-%d %H:%M:%S", time.localtime(start + s))  # noqa: E731
    head = "(APIServer pid=2000) INFO {} [api_server.py:1] "
    lines = [
        head.format(stamp(0)) + "vLLM server version 0.33.0, serving model moonshotai/Kimi",
        head.format(stamp(5)) + "Starting to load model /models/kimi...",
    ]
    for k in range(1, 13):
        lines.append(
            f"(Worker_TP0 pid=2100) INFO {stamp(5 + 3 * k)} [loader.py:1] Loading safetensors "
            f"checkpoint shards: {k * 100 // 64:3d}% Completed | {k}/64 [00:{3 * k:02d}<03:{k:02d}, 3.00s/it]"
        )
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n")
    os.utime(log, (start + 41, start + 41))
    return log


async def test_a_log_silent_for_two_days_is_stale_not_a_two_day_phase(tmp_path: Path) -> None:
    """Through the real file follower (replayed with the lines' own times, as `status`
    reads it): no ETA, no phase of two days, no prediction; the strip says so."""
    follower = FileFollower(str(_stale_log(tmp_path)), initial_lines=500, follow=False)
    lines = [replace(line, timestamp_s=None) async for line in follower.lines()]
    tracker = LoadTracker()
    tracker.observe_unit(False)
    tracker.feed_many(lines)
    progress = tracker.snapshot()
    assert progress.silent_since_s is not None
    assert progress.at_s - progress.silent_since_s > TWO_DAYS_S - 60
    assert progress.eta_s is None and not progress.is_loading
    assert progress.phase_elapsed_s < 60 and max(s.duration_s for s in progress.timeline) < 60
    assert estimate_ready(progress, PhasePlan(DEFAULT_PHASE_S, "defaults")) is None
    explain = LoadExplainer().explain(progress)
    assert explain.predicted_next_load_s is None
    assert explain.diagnosis == "log silent for 2d00h; load state unknown"
    assert render_strip(progress, None).plain == " log silent for 2d00h; load state unknown"
    tracker.observe_unit(True)  # a running unit's silent log is a load that hangs: shown as is
    running = tracker.snapshot()
    assert running.silent_since_s is None and running.phase_elapsed_s > TWO_DAYS_S - 60


def test_status_on_a_log_silent_for_two_days(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "box.toml"
    profile.write_text(
        f'[service]\nlog_file = "{_stale_log(tmp_path)}"\nbase_url = "http://127.0.0.1:9"\n'
    )
    assert main(["status", "-p", str(profile), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    load = report["load"]
    assert load["eta_s"] is None and load["silent_since_s"] is not None
    assert all(span["duration_s"] < 60 for span in load["timeline"])
    assert report["load_explain"]["predicted_next_load_s"] is None
    assert report["load_explain"]["diagnosis"] == "log silent for 2d00h; load state unknown"
    assert main(["status", "-p", str(profile)]) == 1
    assert "log silent for 2d00h; load state unknown" in capsys.readouterr().out
