"""The simulated GPUs never hold more than they have: a start on top of leftovers fails.

Real processes: the first load's workers are left behind as orphans (the seed's
leftover problem), then the unit is started again on the same GPUs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.support.sim_fixtures import FAST_OPTIONS
from tui.serving.load.tracker import LoadTracker
from tui.sim import spec
from tui.sim.box import SimBox, SimServerOptions

GIB = 1024**3


def test_a_start_on_top_of_leftovers_fails_like_vllm(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory(SimServerOptions(**{**_fields(FAST_OPTIONS), "orphans_on_stop": 2}))
    box.start()
    assert box.wait_until_active(timeout_s=90) == "active"
    box.stop()
    assert box.unit.wait_for_state(("inactive", "failed"), timeout_s=30) == "inactive"
    deadline = time.monotonic() + 30
    while len(box.snapshot().processes()) != 2:  # the two orphans, still holding the model
        assert time.monotonic() < deadline, box.snapshot().processes()
        time.sleep(0.1)
    held = {p.gpu_index for p in box.snapshot().processes()}
    assert held == {0, 1}

    box.start()
    peak = 0
    deadline = time.monotonic() + 90
    while box.unit.state not in ("failed", "active"):
        assert time.monotonic() < deadline, box.unit.state
        for sample in box.snapshot().samples:
            assert sample.memory_used_bytes is not None and sample.memory_total_bytes
            assert sample.memory_used_bytes <= sample.memory_total_bytes, sample
            peak = max(peak, sample.memory_used_bytes)
        time.sleep(0.05)
    assert box.unit.state == "failed"
    assert box.unit.show()["Result"] == "exit-code"
    assert peak <= spec.GPU_MEMORY_TOTAL_BYTES
    log = box.log_path.read_text()
    assert "Free memory on device (10." in log  # 95.59 GiB less the 84.7 GiB leftover
    assert "on startup is less than desired GPU memory utilization (0.9, 86.03 GiB)" in log
    assert "EngineCore failed to start." in log
    tracker = LoadTracker()
    tracker.feed_many(log.splitlines())
    progress = tracker.snapshot()
    assert progress.phase == "failed" and progress.failure_line is not None


def _fields(options: SimServerOptions) -> dict[str, object]:
    return {name: getattr(options, name) for name in options.__dataclass_fields__}
