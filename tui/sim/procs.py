"""Simulated vLLM child processes: `VLLM::EngineCore` and its `VLLM::Worker_TPn`.

`python -m tui.sim.procs engine ...` is started by the server; the engine forks
one worker per tensor-parallel rank. A worker "holds GPU memory" by keeping
`<state>/gpu/<pid>.json` up to date (weights, then KV cache, then CUDA graphs,
following `<state>/progress.json` that the server writes) and removes it when
it exits cleanly.

Stopping: the server writes `<state>/stop-plan.json` ({"orphans": N,
"stubborn": bool}) and sends SIGTERM to the engine. The engine tells ranks
< N to become orphans (SIGUSR1, or SIGUSR2 for stubborn ones that ignore
SIGTERM), terminates the others and exits, so those N are reparented to PID 1
(or a subreaper) and keep their GPU file: the seed's leftover workers. A worker
whose parent disappears without such a notice exits, as vLLM's do.
`--defunct-worker` makes the engine leave one exited child unreaped (state Z).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

from setproctitle import setproctitle

POLL_S = 0.1


def start_time_ticks(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat: the process start time in clock ticks since boot."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def process_state(pid: int) -> str | None:
    """Field 3 of /proc/PID/stat ("R", "S", "Z", ...), None when the pid is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def is_alive(pid: int, ticks: int | None = None) -> bool:
    """Running (not a zombie) and, when ticks is given, still the same process."""
    state = process_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    return ticks is None or start_time_ticks(pid) == ticks


def write_json_atomic(path: Path, payload: dict[str, object]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(payload))
    os.replace(temporary, path)


def read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def register_pid(state_dir: Path, role: str) -> None:
    """Append this process to pids.log so a cleanup can find every process ever started."""
    line = f"{os.getpid()} {start_time_ticks(os.getpid())} {role}\n"
    fd = os.open(state_dir / "pids.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Worker:
    """One tensor-parallel rank holding its share of the model on one GPU."""

    def __init__(self, args: argparse.Namespace, rank: int, parent_pid: int) -> None:
        self.args = args
        self.rank = rank
        self.parent_pid = parent_pid
        self.state_dir = Path(args.state_dir)
        self.name = f"VLLM::Worker_TP{rank}"
        self.gpu_file = self.state_dir / "gpu" / f"{os.getpid()}.json"
        self.orphaned = False
        self.stay_signal: int | None = None  # SIGUSR1/2 received: become an orphan
        self.held_bytes = 0  # an orphan keeps what it held; it follows no load any more
        self.stubborn = False
        self.ticks = start_time_ticks(os.getpid())

    def used_bytes(self) -> int:
        progress = read_json(self.state_dir / "progress.json")
        args = self.args
        weights_frac = float(progress.get("weights_frac", 0.0))  # type: ignore[arg-type]
        if self.rank == args.lagging_rank and weights_frac < 1.0:
            weights_frac /= 3  # this rank's weights come in at a third of the pace
        return int(
            args.context_bytes
            + args.weights_bytes * weights_frac
            + args.kv_bytes * float(progress.get("kv_frac", 0.0))  # type: ignore[arg-type]
            + args.graphs_bytes * float(progress.get("graphs_frac", 0.0))  # type: ignore[arg-type]
        )

    def publish(self, used: int) -> None:
        write_json_atomic(
            self.gpu_file,
            {
                "pid": os.getpid(),
                "gpu_index": self.rank % max(self.args.gpu_count, 1),
                "used_bytes": used,
                "process_name": self.name,
                "start_time_ticks": self.ticks,
                "orphaned": self.orphaned,
            },
        )

    def _told_to_stay(self, signum: int, _frame: object) -> None:
        """Only noted here; the loop acts on it (a handler runs between any two steps of the
        loop: one that made it an orphan after the loop had read `orphaned`, but before it
        found the engine gone, let it exit as a worker whose parent left)."""
        self.stay_signal = signum

    def _become_orphan(self, signum: int) -> None:
        self.held_bytes = self.used_bytes()
        self.orphaned = True
        self.stubborn = signum == signal.SIGUSR2
        with contextlib.suppress(OSError):
            os.setsid()  # out of the service's process group, like a real escapee
        if self.stubborn:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        self.publish(self.held_bytes)

    def current_bytes(self) -> int:
        return self.held_bytes if self.orphaned else self.used_bytes()

    def run(self) -> None:
        setproctitle(self.name)
        register_pid(self.state_dir, self.name)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGUSR1, self._told_to_stay)
        signal.signal(signal.SIGUSR2, self._told_to_stay)
        last = -1
        parent_gone = False
        try:
            while True:
                if self.stay_signal is not None and not self.orphaned:
                    self._become_orphan(self.stay_signal)
                    last = self.held_bytes
                used = self.current_bytes()
                if used != last:
                    self.publish(used)
                    last = used
                if not self.orphaned and os.getppid() != self.parent_pid:
                    # The engine tells a worker to stay before it exits, but a starved
                    # worker may see the engine gone before its handler has run: it looks
                    # once more after the sleep, by when the handler has.
                    if parent_gone:
                        return  # "Parent process exited, terminating worker queues"
                    parent_gone = True
                time.sleep(POLL_S)
        finally:
            with contextlib.suppress(OSError):
                self.gpu_file.unlink()


class EngineCore:
    """Forks the workers, reaps them, and carries out the stop plan on SIGTERM."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.state_dir = Path(args.state_dir)
        self.parent_pid = os.getppid()
        self.workers: dict[int, int] = {}  # rank -> pid

    def spawn(self) -> None:
        for rank in range(self.args.tp):
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    Worker(self.args, rank, os.getppid()).run()
                except SystemExit as stop:
                    code = stop.code if isinstance(stop.code, int) else 0
                finally:
                    os._exit(code)
            self.workers[rank] = pid
        if self.args.defunct_worker and os.fork() == 0:
            setproctitle(f"VLLM::Worker_TP{self.args.tp}")
            os._exit(0)  # never reaped: stays <defunct> while the engine lives

    def _stop(self, *_: object) -> None:
        plan = read_json(self.state_dir / "stop-plan.json")
        orphans = int(plan.get("orphans", 0))  # type: ignore[call-overload]
        stubborn = bool(plan.get("stubborn", False))
        leaving = [pid for rank, pid in self.workers.items() if rank < orphans]
        for pid in leaving:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGUSR2 if stubborn else signal.SIGUSR1)
        for rank, pid in self.workers.items():
            if rank >= orphans:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and not all(
            read_json(self.state_dir / "gpu" / f"{pid}.json").get("orphaned") for pid in leaving
        ):
            time.sleep(0.02)
        self._reap(exclude=set(leaving), deadline_s=1.5)
        os._exit(0)

    def _reap(self, exclude: set[int], deadline_s: float) -> None:
        pending = {pid for pid in self.workers.values() if pid not in exclude}
        deadline = time.monotonic() + deadline_s
        while pending and time.monotonic() < deadline:
            for pid in list(pending):
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0] == 0:
                        continue
                pending.discard(pid)
            time.sleep(0.02)
        for pid in pending:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def run(self) -> None:
        setproctitle("VLLM::EngineCore")
        register_pid(self.state_dir, "VLLM::EngineCore")
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.spawn()
        signal.signal(signal.SIGTERM, self._stop)
        print("WORKERS " + " ".join(str(self.workers[r]) for r in sorted(self.workers)), flush=True)
        while os.getppid() == self.parent_pid:
            time.sleep(0.2)
        # The API server vanished without a stop: take the workers down with us.
        for pid in self.workers.values():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        self._reap(exclude=set(), deadline_s=1.5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tui.sim.procs")
    parser.add_argument("role", choices=["engine"])
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--gpu-count", type=int, default=8)
    parser.add_argument("--context-bytes", type=int, default=600 * 1024**2)
    parser.add_argument("--weights-bytes", type=int, default=0)
    parser.add_argument("--kv-bytes", type=int, default=0)
    parser.add_argument("--graphs-bytes", type=int, default=0)
    parser.add_argument("--defunct-worker", action="store_true")
    parser.add_argument("--lagging-rank", type=int, default=None)
    EngineCore(parser.parse_args(argv)).run()


if __name__ == "__main__":
    main()
