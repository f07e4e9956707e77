"""A starved client is flagged client-bound; one that keeps up is not.

The real runner process (`python -m tui.bench.runner`) against the real test SSE server:
starved, it is pinned to core 0 at nice 12 next to a busy loop on the same core, started
once the runner has said `start` (so its imports are not starved too).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tui.bench.model import LevelResult, result_from_dict
from tui.bench.workload import BenchSpec

pytestmark = pytest.mark.skipif(shutil.which("taskset") is None, reason="needs taskset")


@contextmanager
def _busy_loops(count: int) -> Iterator[None]:
    loops = [
        subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait(timeout=10)


def _run(spec: BenchSpec, *, starved: bool) -> LevelResult:
    prefix = ["taskset", "-c", "0", "nice", "-n", "12"] if starved else []
    runner = subprocess.Popen(
        [*prefix, sys.executable, "-m", "tui.bench.runner"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert runner.stdin is not None and runner.stdout is not None
    runner.stdin.write(json.dumps(spec.to_dict()))
    runner.stdin.close()
    result = None
    with _busy_loops(1 if starved else 0):
        for line in runner.stdout:
            message = json.loads(line)
            if message["event"] == "result":
                result = result_from_dict(message["result"])
            if message["event"] == "error":
                pytest.fail(message["message"])
    runner.wait(timeout=60)
    assert result is not None
    (level,) = result.levels
    return level


def _spec(url: str, concurrency: int, requests: int) -> BenchSpec:
    return BenchSpec(
        base_url=url, model="m?itl_ms=1", input_tokens=16, output_tokens=32,
        concurrency=(concurrency,), num_requests=requests, warmup_requests=0,
        read_timeout_s=120.0, progress_interval_s=0.5,
    )  # fmt: skip


def test_a_starved_client_is_flagged_client_bound(sse_server: str) -> None:
    level = _run(_spec(sse_server, 8, 16), starved=True)
    load = level.client_load
    assert load is not None and level.completed == 16
    assert level.client_bound, load
    assert any("lag" in reason for reason in load.reasons), load


def test_a_client_at_low_load_is_not_flagged(sse_server: str) -> None:
    level = _run(_spec(sse_server, 1, 8), starved=False)
    load = level.client_load
    assert load is not None and level.completed == 8
    assert load.send_lag_p99_ms is not None and load.loop_lag_p99_ms is not None
    assert load.cpu_share is not None
    assert not level.client_bound, load
