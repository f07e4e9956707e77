"""Fixtures that start real simulator processes and always clean them up."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tui.sim.box import SimBox, SimServerOptions

SIM_LOAD_SECONDS = 2.5
# Small enough to finish quickly, big enough that timing errors stand out.
FAST_OPTIONS = SimServerOptions(
    shards=16, decode_step_s=0.004, decode_alpha=0.02, log_interval_s=1.0
)


def started(box: SimBox, timeout_s: float = 90) -> SimBox:
    """The box started and ready to answer; a failure quotes its server log's tail."""
    box.start()
    assert box.wait_until_ready(timeout_s=timeout_s), box.log_path.read_text()[-3000:]
    return box


@contextlib.contextmanager
def ready_box(state: Path, options: SimServerOptions, **kwargs: object) -> Iterator[SimBox]:
    """A started, ready SimBox for the block; every process it started ends with the block."""
    kwargs.setdefault("load_seconds", 1.0)
    box = SimBox(state, options=options, **kwargs)  # type: ignore[arg-type]
    try:
        yield started(box)
    finally:
        box.close()


def module_sim_box(name: str, options: SimServerOptions, **kwargs: object) -> object:
    """A module-scoped fixture of one ready SimBox shared by a module's tests (`box =
    module_sim_box("lora", OPTIONS, seed=4)`): the module states only what its box serves."""

    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
        with ready_box(tmp_path_factory.mktemp(name), options, **kwargs) as box:
            yield box

    return fixture


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
