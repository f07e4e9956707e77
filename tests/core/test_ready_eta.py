"""One "ready in about X" that counts every phase still to come (issue item 2).

Pure estimates first, then the real captured vLLM logs: with one earlier load of the
model on record, the estimate taken when the weights finish comes within seconds of
when the server really started (compile, KV cache and graphs included), where the
weights' own ETA says nothing is left.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tui.logs.line import LogLine
from tui.serving.load.eta import (
    DEFAULT_PHASE_S,
    PhasePlan,
    ReadyClock,
    estimate_ready,
    plan_for,
    read_history,
    record_load,
)
from tui.serving.load.tracker import LoadTracker, Phase, vllm_line_time_s
from widgets.load_strip import render_strip

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"
PLAN = PhasePlan(
    {
        "starting": 20.0,
        "weights": 600.0,
        "compile": 90.0,
        "kv_cache": 30.0,
        "cuda_graphs": 45.0,
        "serving": 10.0,
    },
    "defaults",
)


def tracker_at(phase: Phase, elapsed_s: float, eta_s: float | None = None):  # type: ignore[no-untyped-def]
    progress = LoadTracker().snapshot(now_s=0.0)
    return replace(progress, phase=str(phase), phase_elapsed_s=elapsed_s, eta_s=eta_s)


def test_weights_eta_plus_every_later_phase() -> None:
    estimate = estimate_ready(tracker_at(Phase.WEIGHTS, 100.0, eta_s=30.0), PLAN)
    assert estimate is not None and estimate.remaining_s == 30 + 90 + 30 + 45 + 10


def test_a_later_phase_counts_its_rest_and_says_when_it_runs_long() -> None:
    estimate = estimate_ready(tracker_at(Phase.COMPILE, 60.0), PLAN)
    assert estimate is not None and estimate.remaining_s == 30 + 30 + 45 + 10
    late = estimate_ready(tracker_at(Phase.COMPILE, 120.0), PLAN)
    assert late is not None and late.overdue_phase == "compile"
    assert late.remaining_s == 30 + 45 + 10
    strip = render_strip(tracker_at(Phase.COMPILE, 120.0), None, ready=late).plain
    assert "ready in about 1:25" in strip and "longer than usual" in strip
    assert "ETA" not in strip  # one answer only


def test_unknown_weights_time_is_said_not_guessed() -> None:
    plan = PhasePlan(dict(DEFAULT_PHASE_S), "defaults")  # no weights figure by default
    estimate = estimate_ready(tracker_at(Phase.STARTING, 1.0), plan)
    assert estimate is not None and estimate.remaining_s is None
    strip = render_strip(tracker_at(Phase.STARTING, 1.0), None, ready=estimate).plain
    assert "ready time unknown" in strip


def test_history_is_kept_per_host_and_model_and_survives_garbage(tmp_path: Path) -> None:
    path = tmp_path / "load_phases.json"
    assert plan_for(path, "box", "m").basis == "defaults"
    for compile_s in (80.0, 100.0, 300.0):
        record_load(path, "box", "m", {"starting": 5.0, "weights": 500.0, "compile": compile_s})
    plan = plan_for(path, "box", "m")
    assert plan.basis == "3 earlier loads" and plan.seconds["compile"] == 100.0
    assert plan_for(path, "box", "other-model").basis == "defaults"
    path.write_text("{not json")
    assert plan_for(path, "box", "m").basis == "defaults"


def _lines(name: str) -> list[LogLine]:
    return [LogLine(text) for text in (FIXTURES / name).read_text().splitlines()]


def _replay(tracker: LoadTracker, clock: ReadyClock, name: str):  # type: ignore[no-untyped-def]
    """Feed a log line by line; yield (line, snapshot at the line's own time, estimate)."""
    at_s = 0.0
    for line in _lines(name):
        tracker.apply(line)
        at_s = vllm_line_time_s(line.text, 2025) or at_s
        progress = tracker.snapshot(now_s=at_s)
        yield line, progress, clock.update(progress)


def test_a_restart_is_estimated_from_the_previous_load(tmp_path: Path) -> None:
    """The same deployment loaded twice (a restart): the second estimate tracks the truth
    through compile and KV cache, where the weights' own ETA already said nothing was left."""
    path = tmp_path / "load_phases.json"
    replay = _replay(LoadTracker(year=2025), ReadyClock(path, "b"), "server.log")
    assert Phase.SERVING in [progress.phase for _line, progress, _estimate in replay]
    (loads,) = read_history(path).values()
    assert len(loads) == 1 and loads[0]["compile"] > 5  # log time, not read time
    clock = ReadyClock(path, "b")
    seen: list[tuple[float, float]] = []  # (log time, estimated seconds to the server start)
    server_at: float | None = None
    weights_done = False
    for line, progress, estimate in _replay(LoadTracker(year=2025), clock, "server.log"):
        weights_done = weights_done or "Loading weights took" in line.text
        if "Starting vLLM server" in line.text:
            server_at = progress.at_s
            break
        if weights_done:
            assert estimate is not None and estimate.remaining_s is not None
            assert estimate.basis == "1 earlier load"
            serving_s = clock._plan.seconds["serving"]  # type: ignore[union-attr]
            seen.append((progress.at_s, estimate.remaining_s - serving_s))
    assert seen and server_at is not None
    assert server_at - seen[0][0] > 10  # compile and KV cache took real time after the weights
    for at_s, estimated_s in seen:
        assert abs(estimated_s - (server_at - at_s)) <= 2, (at_s, estimated_s, server_at)
