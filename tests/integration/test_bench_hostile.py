"""Benchmarks against servers that answer badly (issue 36): a capacity search where every
request fails exits non-zero, and a /tokenize that answers a JSON list is a one-line
"unavailable", not the end of the run. Real server processes: the simulator and the test
SSE server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.bench_fixtures import start_sse_server
from tui.bench.driver import run_bench
from tui.bench.workload import BenchSpec
from tui.cli import main
from tui.sim.box import SimBox, SimServerOptions


@pytest.fixture(scope="module")
def failing_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimBox]:
    """A simulated vLLM whose every completion answers 500."""
    options = SimServerOptions(shards=2, time_scale=2.0, http_5xx_rate=1.0)
    box = SimBox(tmp_path_factory.mktemp("failing"), load_seconds=1.0, options=options)
    try:
        box.start()
        assert box.wait_until_active(timeout_s=90) == "active", box.log_path.read_text()[-3000:]
        yield box
    finally:
        box.close()


def test_capacity_where_every_request_fails_exits_non_zero(
    failing_box: SimBox, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([
        "bench", "--url", failing_box.base_url, "--capacity", "--json",
        "--input-tokens", "64", "--output-tokens", "8",
    ])  # fmt: skip
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert body["answer"].startswith("not even 1 user meets the SLO")
    assert all(level["completed"] == 0 and level["failed"] > 0 for level in body["levels"])
    assert code == 1
    (line,) = err.strip().splitlines()
    assert line.startswith("servedeck: error: capacity: every request failed (")


def test_bench_where_every_request_fails_exits_non_zero_too(
    failing_box: SimBox, capsys: pytest.CaptureFixture[str]
) -> None:
    """The behaviour --capacity now matches."""
    code = main([
        "bench", "--url", failing_box.base_url, "--json", "--input-tokens", "64",
        "--output-tokens", "8", "--concurrency", "1", "--num-requests", "2",
    ])  # fmt: skip
    capsys.readouterr()
    assert code == 1


async def test_tokenize_answering_a_list_is_unavailable_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    process, url = start_sse_server("--tokenize-list")
    try:
        spec = BenchSpec(
            base_url=url, model="m?itl_ms=1", input_tokens=32, output_tokens=4,
            concurrency=(1,), num_requests=2, warmup_requests=0, read_timeout_s=30.0,
        )  # fmt: skip
        result = await asyncio.wait_for(run_bench(spec), timeout=120)
    finally:
        process.terminate()
        process.wait(timeout=10)
    # /tokenize is unusable; the usage the server charges a probe calibrates instead
    assert result.client["prompt_method"] == "calibrated (usage)"
    assert result.levels[0].total_input_tokens == 2 * 32
    assert result.levels[0].completed == 2
