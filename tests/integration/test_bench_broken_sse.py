"""Benchmarks against servers that break the SSE stream: every run ends, and a bad
chunk costs one failed request, never the run (issue 16). Real server processes.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.bench.client import BadChunk, _chunk_tokens
from tui.bench.driver import BenchError, BenchProgress, run_bench
from tui.bench.workload import BenchSpec

SERVER = Path(__file__).parents[1] / "support" / "broken_sse_server.py"


def _start(mode: str, every: int = 1) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), mode, "--every", str(every)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    assert port.isdigit(), "broken SSE server did not start"
    return process, f"http://127.0.0.1:{port}"


@pytest.fixture
def broken_server(request: pytest.FixtureRequest) -> Iterator[str]:
    mode, every = request.param
    process, url = _start(mode, every)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _spec(url: str, **changes: object) -> BenchSpec:
    values: dict[str, object] = {
        "base_url": url,
        "model": "m",
        "num_requests": 4,
        "warmup_requests": 1,
        "output_tokens": 4,
        "input_tokens": 8,
        "scrape_metrics": False,
        "transport": "httpx",
        "progress_interval_s": 0.2,
    }
    values.update(changes)
    return BenchSpec(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "broken_server",
    [
        (mode, 3)
        for mode in ("int", "null", "string", "list", "usage-int", "usage-list", "choices-int")
    ]
    + [("deep", 3), ("huge", 3)],
    indirect=True,
    ids=lambda param: param[0],
)
async def test_a_non_object_chunk_fails_one_request_not_the_run(broken_server: str) -> None:
    # requests 1 (warm-up) .. 5: only the 3rd is broken
    result = await asyncio.wait_for(run_bench(_spec(broken_server)), timeout=120)
    (level,) = result.levels
    assert (level.completed, level.failed) == (3, 1)
    assert not result.partial


@pytest.mark.parametrize(
    "broken_server", [("keepalive", 1), ("hang", 1)], indirect=True, ids=["keepalive", "hang"]
)
async def test_a_server_that_never_sends_a_token_hits_the_idle_deadline(
    broken_server: str,
) -> None:
    events: list[object] = []
    started = time.monotonic()
    with pytest.raises(BenchError, match=r"warm-up request failed: no first token for 2 s"):
        await asyncio.wait_for(run_bench(_spec(broken_server, read_timeout_s=2), events.append), 60)
    assert time.monotonic() - started < 45
    assert any(isinstance(event, BenchProgress) for event in events), "no progress while waiting"


@pytest.mark.parametrize("broken_server", [("keepalive", 2)], indirect=True, ids=["keepalive"])
async def test_a_request_total_deadline_ends_a_slow_request(broken_server: str) -> None:
    spec = _spec(broken_server, read_timeout_s=60, request_timeout_s=2, num_requests=2)
    result = await asyncio.wait_for(run_bench(spec), timeout=60)
    (level,) = result.levels
    assert level.failed == 1 and level.completed == 1


@pytest.mark.parametrize("broken_server", [("hang", 3)], indirect=True, ids=["hang"])
async def test_the_run_wall_deadline_stops_a_run_with_partial_results(broken_server: str) -> None:
    spec = _spec(broken_server, read_timeout_s=600, run_timeout_s=4, num_requests=2)
    started = time.monotonic()
    result = await asyncio.wait_for(run_bench(spec), timeout=60)
    assert time.monotonic() - started < 40
    assert result.partial
    assert "wall deadline" in result.client.get("stopped", "")


# ---- SSE chunk shapes, fuzzed ------------------------------------------------
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
_chunk = st.fixed_dictionaries(
    {}, optional={"choices": _json, "usage": _json, "error": _json, "id": _json}
)


@settings(max_examples=300, deadline=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_json, _chunk))
def test_any_json_chunk_is_read_or_rejected_as_bad_data(data: object) -> None:
    """Whatever JSON a server sends, the chunk reader returns or raises BadChunk: nothing else."""
    try:
        has_choices, error, tokens = _chunk_tokens(json.loads(json.dumps(data)))
    except BadChunk:
        return
    assert isinstance(has_choices, bool)
    assert error is None or isinstance(error, str)
    assert tokens is None or isinstance(tokens[0], int)
