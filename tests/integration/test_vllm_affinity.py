"""The harness's engine-core placement on a real process tree titled as vLLM's.

A shell renamed VLLM::EngineCore (bash's `exec -a`) with a VLLM::Worker bound to core 0
below it, under a stand-in API server: vLLM's own tree costs a ~23 s start, and only the
titles and the affinities are read here.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.support.vllm_affinity import engines_anywhere, pin_engine_with_worker
from tests.support.vllm_procs import ProcInfo, descendants

TREE = (
    "exec -a VLLM::EngineCore bash -c "
    "'taskset -c 0 bash -c \"exec -a VLLM::Worker sleep 60\" & wait'"
)


def _titled(root: int, title: str) -> ProcInfo:
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        found = [p for p in descendants(root) if p.cmdline.startswith(title)]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no {title} below {root}")


@pytest.fixture
def api_server() -> Iterator[subprocess.Popen[bytes]]:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores: the worker's and another")
    process = subprocess.Popen(["bash", "-c", f"({TREE}) & wait"], start_new_session=True)
    try:
        yield process
    finally:
        os.killpg(process.pid, 9)
        process.wait()


def test_the_engine_core_joins_its_worker_and_quiet_tests_get_it_back(
    api_server: subprocess.Popen[bytes],
) -> None:
    engine = _titled(api_server.pid, "VLLM::EngineCore")
    _titled(api_server.pid, "VLLM::Worker")
    everywhere = os.sched_getaffinity(api_server.pid)
    assert os.sched_getaffinity(engine.pid) == everywhere  # as vLLM leaves it

    said = pin_engine_with_worker(api_server.pid)
    assert said == f"engine core {engine.pid} on cores [0] with its worker"
    assert os.sched_getaffinity(engine.pid) == {0}
    assert os.sched_getaffinity(api_server.pid) == everywhere  # the API server stays free

    # Its own server's engines only: a real-vLLM test's server may live in this worker too.
    with engines_anywhere(api_server.pid) as moved:
        assert moved == 1
        assert os.sched_getaffinity(engine.pid) == everywhere
    assert os.sched_getaffinity(engine.pid) == {0}
    assert pin_engine_with_worker(api_server.pid).startswith("not pinned")  # already there
