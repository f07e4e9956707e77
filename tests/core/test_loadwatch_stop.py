"""A stop ends readiness at once: the tracker's one stop path, and what polls after it.

Issue 34: after a benchmark, a stop was taken for a finished load, because the tracker
kept `http_starting` on and the console still polled /health while the server shut down.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.serving.load.tracker import LoadTracker, Phase
from tui.serving.readiness import Readiness, ReadinessProbe

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"
LINES = (FIXTURES / "server.log").read_text().splitlines()
READY_AT = next(i for i, line in enumerate(LINES) if "Application startup complete" in line)
STOP_AT = next(i for i, line in enumerate(LINES) if "[shutdown]" in line)


def _ready_tracker() -> LoadTracker:
    tracker = LoadTracker(year=2026)
    for raw in LINES[: READY_AT + 1]:
        tracker.apply(raw)
    return tracker


@pytest.mark.parametrize("batched", [False, True])
def test_the_stop_line_ends_readiness_and_polling(batched: bool) -> None:
    tracker = _ready_tracker()
    ready = tracker.snapshot()
    assert ready.ready and ready.http_starting and ReadinessProbe.should_poll(ready)
    if batched:
        tracker.feed_many(LINES[READY_AT + 1 :])
    else:
        for raw in LINES[READY_AT + 1 :]:
            tracker.apply(raw)
    stopped = tracker.snapshot()
    assert stopped.phase == Phase.STOPPED
    assert not stopped.ready and not stopped.http_starting
    assert not ReadinessProbe.should_poll(stopped)
    assert stopped.epoch != ready.epoch  # an answer to a request sent while ready is stale


def test_a_late_ready_line_after_the_stop_is_not_a_new_load() -> None:
    tracker = _ready_tracker()
    for raw in LINES[READY_AT + 1 : STOP_AT + 1]:
        tracker.apply(raw)
    spans = tracker.snapshot().timeline
    tracker.apply("INFO:     Application startup complete.")
    tracker.apply("(APIServer pid=1) INFO 11-29 16:32:03 [a.py:1] Starting vLLM server on http://x")
    late = tracker.snapshot()
    assert late.phase == Phase.STOPPED and not late.ready
    assert not ReadinessProbe.should_poll(late)
    assert [s.phase for s in late.timeline] == [s.phase for s in spans]


def test_process_exit_while_serving_is_the_same_stop() -> None:
    tracker = _ready_tracker()
    before = tracker.snapshot()
    tracker.observe_exit(0, at_s=before.at_s + 1)
    after = tracker.snapshot()
    assert after.phase == Phase.STOPPED and not after.ready and not after.http_starting
    assert after.epoch != before.epoch and not ReadinessProbe.should_poll(after)


def test_a_failed_load_is_not_polled() -> None:
    tracker = LoadTracker(year=2026)
    for raw in LINES[: next(i for i, line in enumerate(LINES) if "Starting vLLM" in line)]:
        tracker.apply(raw)
    tracker.apply("(EngineCore pid=1) ERROR 11-29 16:32:00 [core.py:1] EngineCore failed to start")
    assert tracker.snapshot().phase == Phase.FAILED
    assert not ReadinessProbe.should_poll(tracker.snapshot())


def test_an_inactive_unit_is_never_polled() -> None:
    ready = _ready_tracker().snapshot()
    assert not ReadinessProbe.should_poll(ready, unit_active=False)
    assert ReadinessProbe.should_poll(ready, unit_active=True)
    assert not ReadinessProbe.should_poll(None, unit_active=False)


def test_a_new_load_moves_the_epoch_again() -> None:
    tracker = _ready_tracker()
    for raw in LINES[READY_AT + 1 :]:
        tracker.apply(raw)
    stopped = tracker.snapshot().epoch
    tracker.apply("(APIServer pid=9) INFO 11-29 17:00:00 [a.py:1] vLLM server version 0.33.0")
    assert tracker.snapshot().epoch != stopped
    answer = Readiness(True, True, ("m",), 0.01, None, 0.0, epoch=stopped)
    assert answer.epoch != tracker.epoch  # the console drops it
