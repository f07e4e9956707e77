"""Fixtures that start real simulator processes and always clean them up."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tui.sim.box import SimBox, SimServerOptions

SIM_LOAD_SECONDS = 2.5
# Small enough to finish quickly, big enough that timing errors stand out.
FAST_OPTIONS = SimServerOptions(
    shards=16, decode_step_s=0.004, decode_alpha=0.02, log_interval_s=1.0
)


@pytest.fixture
def sim_box_factory(tmp_path: Path) -> Iterator[Callable[..., SimBox]]:
    """Make SimBoxes under tmp_path; every process they started is ended afterwards."""
    boxes: list[SimBox] = []

    def make(options: SimServerOptions = FAST_OPTIONS, **kwargs: object) -> SimBox:
        state = tmp_path / f"box{len(boxes)}"
        kwargs.setdefault("load_seconds", SIM_LOAD_SECONDS)
        box = SimBox(state, options=options, **kwargs)  # type: ignore[arg-type]
        boxes.append(box)
        return box

    yield make
    for box in boxes:
        box.close()


@pytest.fixture(scope="module")
def serving_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
    """One active simulated service shared by a module's read-mostly tests."""
    box = SimBox(
        tmp_path_factory.mktemp("sim"), seed=7, load_seconds=SIM_LOAD_SECONDS, options=FAST_OPTIONS
    )
    try:
        box.start()
        state = box.wait_until_active(timeout_s=90)
        assert state == "active", box.log_path.read_text()[-3000:]
        yield box
    finally:
        box.close()
