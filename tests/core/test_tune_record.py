"""A tune in the flight recording: each start a Deployment attempt, the result in the handoff.

A real Recorder writes the profile's recording and the summary reads it back; the load
progress is the real LoadTracker's over captured vLLM log lines. The Deck is a stand-in
holding only the profile and host label TuneRecording reads (no host is touched).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.log_samples import FIXTURES
from tui.core.config import demo_profile
from tui.record.attempts import deployment_attempts
from tui.record.query import RecordingReader
from tui.record.where import recording_path
from tui.serving.load.tracker import LoadTracker
from tui.summary.recorded import recorded_history
from tui.summary.recorded_render import tune_lines
from tui.tune.driver import Outcome
from tui.tune.record import TuneRecording

OUTCOMES = [
    Outcome("seqs=32", "a", "served", 1, "TP=1", load_s=20.0, capacity_users=24,
            capacity_users_above=32, per_user_tok_s=20.0, total_tok_s=480.0),
    Outcome("seqs=4", "b", "served", 1, "TP=1", load_s=21.0, capacity_users=4,
            capacity_users_above=8, per_user_tok_s=30.0, total_tok_s=120.0),
    Outcome("oom", "c", "failed", 1, "TP=1", phase="kv_cache", failure_line="CUDA out of memory"),
    Outcome("tp6", "d", "skipped", 6, "TP=6", reason="64 / 6 heads: not whole"),
]  # fmt: skip


def _lines() -> list[str]:
    return (FIXTURES / "server.log").read_text(encoding="utf-8").splitlines()


def test_each_start_is_an_attempt_and_the_tune_is_a_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVEDECK_DATA_DIR", str(tmp_path))
    profile = demo_profile()
    deck = SimpleNamespace(profile=profile, host_label="simulator")
    said: list[str] = []
    recording = TuneRecording(deck, said.append)  # type: ignore[arg-type]
    assert recording.recorder is not None, said
    for seqs in (32, 4):
        argv = ["vllm", "serve", "m", "--max-num-seqs", str(seqs), "--tensor-parallel-size", "1"]
        recording.exec(100 + seqs, argv, {"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"})
        tracker = LoadTracker()
        for line in _lines():
            tracker.feed_many([line])
            recording.progress(tracker.snapshot())
            if tracker.snapshot().phase == "serving":
                break  # the capture goes on to its shutdown: the tune stops it itself
        recording.ready(["m"])
        recording.stopped()
    recording.exec(999, ["vllm", "serve", "m", "--max-num-seqs", "8"], {})
    recording.stopped()  # the server died before its first log line: still an attempt
    recording.finished(OUTCOMES, "capacity")
    recording.close()

    with RecordingReader(recording_path(profile)) as reader:
        events = reader.events(0, 4e9)
    attempts = deployment_attempts(events)
    assert len(attempts) == 3, [e.text for e in events]
    assert attempts[2].outcome == "stopped before serving"
    assert attempts[0].outcome == "served" and attempts[1].outcome == "served"
    assert "TP=1" in attempts[0].config_text
    assert attempts[1].config_text == "max_num_seqs 32 -> 4"  # which configuration it was
    assert any(e.source == "tune" and "best: seqs=32" in e.text for e in events)

    history = recorded_history(profile, "simulator")
    assert history is not None and history.tune is not None
    text = "\n".join(tune_lines(history))
    assert text.startswith("## Tune")
    assert "best: seqs=32 (24 users), +500% over seqs=4 (4 users): beyond the noise" in text
    assert "| 1 | seqs=32 | served |" in text
    assert "Pareto front" in text and "seqs=32 20.0 / 480" in text
    assert "- oom: failed at kv_cache: CUDA out of memory" in text
    assert "- tp6: skipped: 64 / 6 heads: not whole" in text


def test_a_busy_recording_is_said_and_the_tune_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVEDECK_DATA_DIR", str(tmp_path))
    deck = SimpleNamespace(profile=demo_profile(), host_label="simulator")
    first = TuneRecording(deck, print)  # type: ignore[arg-type]
    said: list[str] = []
    try:
        second = TuneRecording(deck, said.append)  # type: ignore[arg-type]
        assert second.recorder is None and said[0].startswith("not recording the tune: ")
        second.finished(OUTCOMES, "capacity")  # goes nowhere, raises nothing
        second.close()
    finally:
        first.close()


def test_a_held_recording_gets_the_result_through_its_holders_feed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A console holding the recording hands its feed: no second recorder is tried (it
    would be refused), the loads are the console's, the result is written there."""
    monkeypatch.setenv("SERVEDECK_DATA_DIR", str(tmp_path))
    profile = demo_profile()
    deck = SimpleNamespace(profile=profile, host_label="simulator")
    holder = TuneRecording(deck, print)  # type: ignore[arg-type]
    said: list[str] = []
    try:
        tune = TuneRecording(deck, said.append, held_feed=holder.feed)  # type: ignore[arg-type]
        assert tune.recorder is None and said == []
        tune.exec(7, ["vllm", "serve", "m"], {})  # the holder records the loads itself
        tune.finished(OUTCOMES, "capacity")
        tune.close()
    finally:
        holder.close()
    with RecordingReader(recording_path(profile)) as reader:
        events = reader.events(0, 4e9)
    assert [e.source for e in events] == ["tune"], [e.text for e in events]


def test_no_tune_no_section() -> None:
    assert tune_lines(None) == []
    assert tune_lines(SimpleNamespace(tune=None)) == []
