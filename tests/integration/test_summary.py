"""The state summary on the simulator: golden file, well-formed tables, a failing collector."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.summary_helpers import (
    demo_deck,
    normalised,
    seed_history,
    table_lines_outside_tables,
    table_shapes,
)
from tui.core.config import demo_profile
from tui.sim.box import SimBox, SimServerOptions
from tui.summary import CollectTimeouts, collect_summary, render_json, render_markdown

GOLDEN = Path(__file__).parents[1] / "support" / "golden" / "summary_demo.md"
Factory = Callable[..., SimBox]
# The demo's own server settings (64 shards), loading fast.
DEMO_OPTIONS = SimServerOptions(log_interval_s=30.0)


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def _serving_summary(sim_box_factory: Factory) -> tuple[str, object]:
    box = sim_box_factory(DEMO_OPTIONS, load_seconds=2.0)
    box.start()
    assert box.wait_until_active(timeout_s=90) == "active", box.log_path.read_text()[-2000:]
    # Workers publish their memory on their own 0.1 s poll: on a loaded machine the last
    # CUDA-graph share can land after the port opens. The golden file wants the plateau.
    deadline = time.monotonic() + 30
    while len({s.memory_used_bytes for s in box.snapshot().samples}) > 1:
        assert time.monotonic() < deadline, "GPU memory never levelled off"
        time.sleep(0.05)
    seed_history(demo_profile())
    deck = demo_deck(box)
    try:
        inputs = await collect_summary(deck)
    finally:
        await deck.close()
    return render_markdown(inputs), inputs


async def test_demo_summary_matches_the_golden_file(sim_box_factory: Factory, utc: None) -> None:
    _, inputs = await _serving_summary(sim_box_factory)
    assert inputs.problems == ()  # type: ignore[attr-defined]
    text = render_markdown(normalised(inputs))  # type: ignore[arg-type]
    if os.environ.get("SERVEDECK_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "run with SERVEDECK_UPDATE_GOLDEN=1 and review the diff"


async def test_every_table_is_well_formed_and_sections_are_present(
    sim_box_factory: Factory,
) -> None:
    text, _ = await _serving_summary(sim_box_factory)
    shapes = table_shapes(text)
    assert len(shapes) >= 10
    for header, rows in shapes:
        assert header >= 2 and rows, (header, rows)
        assert all(cells == header for cells in rows), (header, rows)
    assert table_lines_outside_tables(text) == []
    assert text.index("## At a glance") < text.index("## Hardware")
    for heading in (
        "## Software",
        "## Model",
        "## Service",
        "### Load timeline",
        "## Now",
        "## Benchmarks",
        "## Incidents",
        "## Preflight plan",
        "## Next steps",
        "## Relevant files",
    ):
        assert heading in text
    # facts the seed summary had, now collected
    for fact in ("12.0 (sm_120)", "no (PCIe only)", "GPUs 0-3 on node 0", "vllm | 0.33.0"):
        assert fact in text
    assert "| 61 |" in text and "384 routed, top-8" in text and "MLA" in text
    assert "| serving |" in text and "**TP=8** (chosen)" in text
    assert "| 2026-01-01 10:00 | moonshotai/Kimi-K2.5 | TP=8 |" in text  # newest run first
    assert "kill-request" in text and "VLLM::Worker_TP3" in text


async def test_a_collector_that_times_out_leaves_a_line_and_the_rest_renders(
    sim_box_factory: Factory,
) -> None:
    """The box is never started: /metrics is refused and the GPU read gets no time at all."""
    box = sim_box_factory(DEMO_OPTIONS, load_seconds=2.0)
    deck = demo_deck(box)
    try:
        inputs = await collect_summary(deck, timeouts=CollectTimeouts(gpu_s=0.0))
    finally:
        await deck.close()
    problems = "\n".join(inputs.problems)
    assert "gpus: timed out after 0 s" in problems
    assert "serving metrics:" in problems
    text = render_markdown(inputs)
    assert "## Collection problems" in text and "gpus: timed out" in text
    assert "| name | moonshotai/Kimi-K2.5 |" in text  # the model section still rendered
    assert "_No plan: the model or the GPUs were not collected._" in text
    assert '"problems"' in render_json(inputs)
