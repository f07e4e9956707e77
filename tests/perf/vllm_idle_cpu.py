"""Print the CPU a test vLLM server burns idle and per generated token, and its tokens/s.

    python -m tests.perf.vllm_idle_cpu [--engine-anywhere] [--burners=N [--engine-nice=N]]
        [NAME=VALUE ...]

Starts one server the harness's way (tests/support/vllm_harness.py), with NAME=VALUE
added to its environment (for comparing, say, OMP_WAIT_POLICY=PASSIVE against the
harness's own), then reads its processes' CPU (utime+stime of every thread, from
/proc/PID/stat) over 30 s with no request, over one stream, and over c=1 and c=4
runs. On two shared cores a server that spins while idle steals from every other
test. The harness puts the engine core on its worker's cores
(tests/support/vllm_affinity.py); --engine-anywhere gives it every core back, as vLLM
leaves it, for comparing. --burners=N runs the serving part beside N busy loops (nice 0)
with this script and the server at nice -10, as a `quiet` test runs under xdist
(tests/support/quiet.py), and prints the cores the loops got: the other tests' share.
--engine-nice=N leaves the engine core at N meanwhile. Not a test: the figures depend on
the machine and its load (tests/perf/results/vllm_idle_cpu.txt: one run of each).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.support.quiet import prioritized
from tests.support.vllm_affinity import set_affinity, threads
from tests.support.vllm_harness import start_vllm_server, stop_vllm_server
from tests.support.vllm_install import ensure_tiny_model, ensure_vllm_venv
from tests.support.vllm_procs import descendants

IDLE_WINDOW_S = 30.0
BURNERS: list[int] = []  # pids of the busy loops running now
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_by_role(root: int) -> dict[str, float]:
    """CPU seconds so far of root and its tree, by process title (API, EngineCore, Worker)."""
    found: dict[str, float] = {}
    for pid, name in [(root, "api")] + [(p.pid, p.cmdline.split()[0]) for p in descendants(root)]:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found[name] = found.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / TICKS_PER_S
    return found


def tree_cpu_s(root: int) -> float:
    """CPU seconds of root's tree so far, children it already reaped included."""
    stat = Path(f"/proc/{root}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    reaped = (int(fields[13]) + int(fields[14])) / TICKS_PER_S
    return sum(cpu_by_role(root).values()) + reaped


def threads_by_role(root: int) -> str:
    """How many threads each process of root's tree runs, and on which cores."""
    rows = []
    for pid, name in [(root, "api")] + [(p.pid, p.cmdline.split()[0]) for p in descendants(root)]:
        try:
            count = len(os.listdir(f"/proc/{pid}/task"))
            cores = sorted(os.sched_getaffinity(pid))
        except OSError:
            continue
        rows.append(f"{name.rsplit('/', 1)[-1]} {count} threads on {cores}")
    return "; ".join(rows)


def stream(base_url: str, model: str, tokens: int) -> int:
    """One completion of `tokens` tokens, streamed; returns the tokens it got."""
    body = {
        "model": model,
        "prompt": "Once upon a time",
        "max_tokens": tokens,
        "min_tokens": tokens,
        "ignore_eos": True,
        "stream": True,
    }
    got = 0
    with httpx.stream("POST", f"{base_url}/v1/completions", json=body, timeout=300) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: {"):
                got += 1
    return got


def process_cpu_s(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def measured(root: int, label: str, expected: int | None, run: object) -> None:
    """Print CPU per role over `run` (a callable returning chunks) or an idle window, how
    many of the `expected` tokens came merged into another's chunk, and what the busy
    loops beside it got (the other tests' share)."""
    before, started = cpu_by_role(root), time.monotonic()
    burnt = sum(process_cpu_s(pid) for pid in BURNERS)
    tokens = run() if callable(run) else (time.sleep(IDLE_WINDOW_S) or 0)
    wall_s = time.monotonic() - started
    burnt = sum(process_cpu_s(pid) for pid in BURNERS) - burnt
    after = cpu_by_role(root)
    used = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
    total = sum(used.values())
    roles = "  ".join(f"{name} {seconds:5.1f}" for name, seconds in sorted(used.items()))
    rate = (
        f"  {tokens / wall_s:6.1f} tok/s  {1000 * total / tokens:6.2f} ms CPU/token"
        if tokens
        else ""
    )
    merged = f"  {expected - tokens} of {expected} tokens merged" if expected else ""
    merged += f"  busy loops {burnt / wall_s:4.2f} cores" if BURNERS else ""
    print(
        f"{label:10s} wall {wall_s:5.1f} s  CPU {total:5.1f} s ({total / wall_s:4.2f} cores)"
        f"  [{roles}]{rate}{merged}",
        flush=True,
    )


@contextlib.contextmanager
def burning(count: int) -> Iterator[None]:
    """`count` busy shell loops at the default priority meanwhile."""
    loops = [
        subprocess.Popen(
            ["sh", "-c", "while :; do :; done"],
            preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, 0),  # not the client's
        )
        for _ in range(count)
    ]
    BURNERS.extend(loop.pid for loop in loops)
    try:
        yield
    finally:
        BURNERS.clear()
        for loop in loops:
            loop.kill()
            loop.wait()


def concurrent(base_url: str, model: str, clients: int, each: int, tokens: int) -> int:
    """`clients` threads each streaming `each` completions; returns the tokens got."""
    counts: list[int] = []

    def client() -> None:
        counts.append(sum(stream(base_url, model, tokens) for _ in range(each)))

    workers = [threading.Thread(target=client) for _ in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts)


def main(argv: list[str]) -> int:
    anywhere = "--engine-anywhere" in argv
    burners = int(next((a.split("=")[1] for a in argv if a.startswith("--burners=")), "0"))
    nices = [int(a.split("=")[1]) for a in argv if a.startswith("--engine-nice=")]
    engine_nice = nices[0] if nices else None
    argv = [arg for arg in argv if not arg.startswith("--")]
    for pair in argv:
        name, _, value = pair.partition("=")
        os.environ[name] = value
    venv = ensure_vllm_venv()
    model = ensure_tiny_model(venv.python)
    print(f"extra env {argv or 'none'}; load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="servedeck-vllm-idle-") as root:
        before_start = time.monotonic()
        server = start_vllm_server(venv, model.path, Path(root, "server"))
        print(
            f"start      wall {time.monotonic() - before_start:5.1f} s"
            f"  CPU {tree_cpu_s(server.pid):5.1f} s  ({threads_by_role(server.pid)})",
            flush=True,
        )
        try:
            pid, url, name = server.pid, server.base_url, server.model
            print(f"affinity: {server.affinity}", flush=True)
            if anywhere:
                for engine in descendants(pid):
                    if engine.cmdline.startswith("VLLM::EngineCore"):
                        set_affinity(engine.pid, os.sched_getaffinity(0))
                print("engine core given every core back", flush=True)
            time.sleep(5.0)  # the first seconds after /health still warm up
            measured(pid, "idle", None, None)
            with contextlib.ExitStack() as quiet:
                if (
                    burners
                ):  # as a `quiet` test beside other workers' tests (tests/support/quiet.py)
                    quiet.enter_context(prioritized(os.getpid()))  # client and server
                    quiet.enter_context(burning(burners))
                    if engine_nice is not None:
                        for engine in descendants(pid):
                            if engine.cmdline.startswith("VLLM::EngineCore"):
                                for tid in threads(engine.pid):
                                    os.setpriority(os.PRIO_PROCESS, tid, engine_nice)
                measured(pid, "1 stream", 256, lambda: stream(url, name, 256))
                measured(pid, "c=1", 8 * 128, lambda: concurrent(url, name, 1, 8, 128))
                measured(pid, "c=1 short", 48 * 24, lambda: concurrent(url, name, 1, 48, 24))
                measured(pid, "c=4", 16 * 128, lambda: concurrent(url, name, 4, 4, 128))
            measured(pid, "idle after", None, None)
        finally:
            before_stop = time.monotonic()
            report = stop_vllm_server(server)
            print(
                f"stop       wall {time.monotonic() - before_stop:5.1f} s  "
                f"needed SIGKILL: {len(report.killed)}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
