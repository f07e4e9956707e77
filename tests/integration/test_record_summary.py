"""The summary's flight-recorder parts: incidents in the window and the Deployment attempts table."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tests.integration.test_record_core import _unit
from tui.core import paths
from tui.core.config import demo_profile
from tui.record.attempts import config_of, deployment_attempts
from tui.record.feed import RecordFeed
from tui.record.model import Event
from tui.record.where import recording_path
from tui.record.writer import Recorder
from tui.summary.recorded import recorded_history
from tui.summary.recorded_render import deployment_attempts_lines, recorded_incidents_lines

MINIMAX = "MiniMaxAI/MiniMax-M2.5"
FAILURE = (
    "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
    "weight quantization block_n = 128."
)


def _phase(
    ts: float, phase: str, previous: str | None, spans: Sequence[tuple[str, float, float]] = ()
) -> Event:
    timeline = [{"phase": p, "started_at_s": s, "duration_s": d} for p, s, d in spans]
    data = {"phase": phase, "previous": previous, "timeline": timeline, "model": MINIMAX}
    return Event(ts, "engine", "load", f"load phase: {phase}", data=data)


def _exec(ts: float, pid: int, tp: int, extra: tuple[str, ...] = ()) -> Event:
    argv = [
        "vllm",
        "serve",
        MINIMAX,
        "--tensor-parallel-size",
        str(tp),
        "--max-model-len",
        "65536",
        *extra,
    ]
    data = {"pid": pid, "argv": argv, "env": {"VLLM_USE_V1": "1"}}
    return Event(ts, "service", "exec", f"exec pid {pid}", data=data)


def _night() -> list[Event]:
    t = 1_800_000_000.0
    return [
        _exec(t, 100, 8, ("--enable-expert-parallel",)),
        _phase(t + 1, "starting", None),
        _phase(t + 5, "weights", "starting", [("starting", t + 1, 4.0)]),
        _phase(t + 300, "failed", "weights", [("starting", t + 1, 4.0), ("weights", t + 5, 295.0)]),
        Event(
            t + 300,
            "engine",
            "load",
            f"load failed: {FAILURE}",
            data={"phase": "weights", "failure_line": FAILURE},
        ),
        _exec(t + 600, 200, 4),
        _phase(t + 601, "starting", "failed"),
        _phase(
            t + 2460,
            "serving",
            "cuda_graphs",
            [
                ("starting", t + 601, 10.0),
                ("weights", t + 611, 1700.0),
                ("compile", t + 2311, 100.0),
                ("cuda_graphs", t + 2411, 49.0),
            ],
        ),
        Event(t + 2461, "engine", "readiness", "ready: minimax", data={"ready": True}),
        Event(
            t + 3000,
            "action",
            "bench",
            "benchmark",
            data={"best_output_tok_s": 1410.0, "single_stream_tok_s": 82.0},
        ),
    ]


def test_attempts_say_what_changed_how_it_ended_and_what_it_reached() -> None:
    first, second = deployment_attempts(_night())
    assert "TP=8" in first.config_text and "EP=on" in first.config_text
    assert first.outcome == f"failed at weights: {FAILURE}"
    assert "TP 8 -> 4" in second.config_text and "EP on -> -" in second.config_text
    assert "max_model_len" not in second.config_text  # unchanged: not repeated
    assert second.outcome == "served" and second.served_after_s == 1860.0
    assert second.single_stream_tok_s == 82.0 and second.best_tok_s == 1410.0
    assert sum(seconds for _, seconds in second.phase_times) == 1859.0


def test_flag_spellings() -> None:
    assert config_of(
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--model=M", "-tp", "2"]
    ) == {
        "model": "M",
        "TP": "2",
    }
    assert (
        config_of(["python", "-m", "sglang.launch_server", "--model-path", "M", "--tp-size", "8"])[
            "TP"
        ]
        == "8"
    )


def test_summary_sections_from_a_recording(tmp_path: Path) -> None:
    profile = demo_profile()
    with Recorder(recording_path(profile), host_label="simulator") as recorder:
        feed = RecordFeed(recorder, "simulator")
        for event in _night():
            feed.event(Event(event.ts_s + 100_000_000.0, **_rest(event)))
        feed.observe_unit(_unit("failed", "failed", None, 1), 1_900_002_000.0)
    history = recorded_history(profile, "simulator", now_s=1_900_004_000.0)
    assert history is not None and history.since_what == "24 h"
    attempts = "\n".join(deployment_attempts_lines(history))
    assert "## Deployment attempts" in attempts
    assert "| 1 |" in attempts and "| 2 |" in attempts
    assert "failed at weights: ValueError" in attempts and "82.0 tok/s single stream" in attempts
    assert "TP 8 -> 4" in attempts
    incidents = "\n".join(recorded_incidents_lines(history))
    assert "From the flight recorder, since 24 h" in incidents
    assert "load failed: ValueError" in incidents and "failed (failed)" in incidents


def _rest(event: Event) -> dict[str, object]:
    return {
        "kind": event.kind,
        "source": event.source,
        "text": event.text,
        "gpu": event.gpu,
        "data": event.data,
    }


def test_a_handoff_right_after_another_keeps_the_deployment_history(tmp_path: Path) -> None:
    """A summary exported 26 s after the last one lists the same attempts (the history),
    while its incidents start at the last summary (the news)."""
    profile = demo_profile()
    shift_s = 100_000_000.0
    with Recorder(recording_path(profile), host_label="simulator") as recorder:
        feed = RecordFeed(recorder, "simulator")
        for event in _night():
            feed.event(Event(event.ts_s + shift_s, **_rest(event)))
    now_s = 1_800_000_000.0 + shift_s + 4000.0
    earlier = paths.data_dir() / "summaries" / "summary-demo-earlier.md"
    earlier.parent.mkdir(parents=True, exist_ok=True)
    earlier.write_text("# State summary\n")
    os.utime(earlier, (now_s - 26.0, now_s - 26.0))
    history = recorded_history(profile, "simulator", now_s=now_s)
    assert history is not None and history.since_what == "the last summary"
    attempts = "\n".join(deployment_attempts_lines(history))
    assert "| 1 |" in attempts and "| 2 |" in attempts, attempts
    assert "failed at weights: ValueError" in attempts and "TP 8 -> 4" in attempts
    assert "No service starts recorded" not in attempts
    incidents = "\n".join(recorded_incidents_lines(history))
    assert "since the last summary" in incidents
    assert "load failed" not in incidents  # older than the last summary: not news
