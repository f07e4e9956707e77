"""The benchmark truths on a simulated box: a finished capacity search reaches the recorder's
Timeline and heads the handoff's Benchmarks section; the exporter skips a cancelled run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.summary_helpers import bench_run, demo_deck
from tui.bench.capacity.driver import CapacityProcess
from tui.bench.capacity.history import append_capacity
from tui.bench.capacity.search import CapacitySlo
from tui.bench.capacity.spec import CapacitySpec
from tui.bench.context import context_for_profile
from tui.bench.driver import BenchProcess
from tui.bench.history import append_result
from tui.bench.workload import BenchSpec
from tui.exporter.runner import ExporterRunner
from tui.record.feed import RecordFeed
from tui.record.headless import Cadence, HeadlessRecorder
from tui.record.query import RecordingReader
from tui.record.writer import Recorder
from tui.sim.box import SimBox, SimServerOptions
from tui.summary.collect import collect_summary
from tui.summary.render import render_markdown

# The search's levels pass or miss on the simulator's latencies: quiet (tests/support/quiet.py).
pytestmark = pytest.mark.quiet
FAST = Cadence(gpu_s=0.5, service_s=0.5, metrics_s=1.0, readiness_s=0.5, procs_s=1.0, files_s=0.3)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
    # A clock 5 times real time: these tests read where a search's answer goes, not its
    # accuracy (tests/integration/test_bench_capacity.py holds that to 10 % at 2).
    options = SimServerOptions(shards=4, time_scale=5.0, log_interval_s=1.0)
    sim = SimBox(tmp_path_factory.mktemp("truths"), load_seconds=1.5, options=options)
    try:
        sim.start()
        assert sim.wait_until_active(timeout_s=90) == "active", sim.log_path.read_text()[-3000:]
        yield sim
    finally:
        sim.close()


def _capacity_events(db: Path) -> list[object]:
    with RecordingReader(db) as reader:
        return [event for event in reader.events() if event.source == "capacity"]


async def test_a_finished_capacity_search_is_on_the_timeline_and_heads_the_handoff(
    box: SimBox, tmp_path: Path
) -> None:
    deck = demo_deck(box)
    db = tmp_path / "recording.sqlite"
    recorder = Recorder(db, host_label=deck.host_label).start()
    stop = asyncio.Event()
    feed = RecordFeed(recorder, deck.host_label)
    recording = asyncio.create_task(HeadlessRecorder(deck, feed, FAST).run(None, stop))
    try:
        await asyncio.sleep(1.0)  # the recorder follows the capacity history from here on
        context = replace(context_for_profile(deck.profile), host=deck.host_label)
        bench = BenchSpec(base_url=box.base_url, input_tokens=128, output_tokens=32,
                          warmup_requests=0, context=context)  # fmt: skip
        # No ITL objective (as test_bench_capacity's demo search): a stall on a busy runner
        # is a level's ITL p99. Four levels keep it short; the answer is still a bracket.
        spec = CapacitySpec(bench, slo=CapacitySlo(itl_p99_ms=None), rounds=2, max_levels=4)
        process = CapacityProcess(spec)
        _ = [event async for event in process.events()]
        result = process.result
        assert result is not None and not result["partial"] and result["levels"]
        append_capacity(result)
        for _ in range(100):
            if _capacity_events(db):
                break
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await recording
        recorder.close()
    (event,) = _capacity_events(db)
    assert event.kind == "action" and event.data["finished"]  # type: ignore[attr-defined]
    assert event.data["slo"]["ttft_p99_ms"] == 2000.0  # type: ignore[attr-defined]
    assert len(event.data["levels"]) == len(result["levels"])  # type: ignore[attr-defined]
    assert event.text.startswith(f"capacity search: {result['answer']}; proved ")  # type: ignore[attr-defined]

    inputs = await collect_summary(deck)
    markdown = render_markdown(inputs)
    section = markdown.split("## Benchmarks\n\n", 1)[1]
    first = section.splitlines()[0]
    assert first.startswith(f"- Capacity: {result['answer']}; proved "), first
    assert " users (met at " in first or "no level tried missed" in first, first


async def test_the_exporter_skips_a_cancelled_run(box: SimBox) -> None:
    deck = demo_deck(box)
    good = bench_run("good", deck.profile, tp=8, ep=False, speed=82.0,
                     when="2026-01-01T10:00:00+00:00")  # fmt: skip
    append_result(good)
    # The same preset, cancelled as soon as it started, on this deck's (random) port:
    # the same configuration as the good run.
    context = replace(context_for_profile(deck.profile), host=deck.host_label)
    assert context.config_hash == good.context.config_hash
    spec = BenchSpec(base_url=box.base_url, preset="sweep", input_tokens=1024,
                     output_tokens=256, concurrency=(1, 8), warmup_requests=0, context=context)  # fmt: skip
    process = BenchProcess(spec)
    async for _event in process.events():
        process.cancel()
    cancelled = process.result
    assert cancelled is not None and cancelled.partial
    append_result(cancelled)

    runner = ExporterRunner(deck, host_label="gpu-node-1")
    runner.refresh()
    families = {
        family.name: [(dict(s.labels), s.value) for s in family.samples]
        for family in text_string_to_metric_families(generate_latest(runner.registry()).decode())
    }
    (output,) = families["servedeck_bench_output_tokens_per_second"]
    assert output == (
        {"host": "gpu-node-1", "unit": runner.unit, "model": runner.model, "preset": "sweep"},
        pytest.approx(good.best_output_throughput),
    )
    (started,) = families["servedeck_bench_timestamp_seconds"]
    assert started[1] == 1767261600.0  # the good run, not the newer cancelled one
