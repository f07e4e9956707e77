"""The restart-loop detector on the simulator's unit: real processes, a real log."""

from __future__ import annotations

import time

import pytest

from tui.serving.unit.restart_loop import RestartLoopDetector
from tui.sim.box import SimBox, SimServerOptions


@pytest.mark.timeout(240)
def test_a_simulated_unit_restarting_into_its_leftovers_is_a_loop() -> None:
    """The simulator's unit (Restart=on-failure) started on top of the orphans of its own
    earlier run fails vLLM's free-memory check on every start; NRestarts rises."""
    with SimBox(load_seconds=1.0, options=SimServerOptions(orphans_on_stop=8)) as box:
        box.start()
        assert box.wait_until_active(60) == "active"
        box.stop()
        box.unit.wait_for_state(("inactive", "failed"), 30)
        assert box.live_processes()  # the orphans hold the GPUs
        box.unit.restart_policy = "on-failure"
        detector = RestartLoopDetector(box.unit.name)
        detector.observe(box.unit.n_restarts, time.time())
        box.start()
        loop = None
        deadline = time.monotonic() + 120
        offset = 0
        while loop is None and time.monotonic() < deadline:
            time.sleep(0.5)
            text = box.log_path.read_text(errors="replace") if box.log_path.exists() else ""
            detector.feed(text[offset:].splitlines())
            offset = len(text)
            detector.observe(box.unit.n_restarts, time.time())
            loop = detector.check()
        box.unit.restart_policy = "no"
    assert loop is not None, "no loop seen in 120 s"
    assert loop.cause == "free-memory check" and loop.restarts >= 2
    assert "Free memory on device" in loop.evidence
