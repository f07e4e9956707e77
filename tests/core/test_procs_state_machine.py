"""The kill state machine under every interleaving of exits and pid reuse (hypothesis).

The helper's `kill_targets` takes its process table as a parameter; here the table
is a model (an in-memory process table whose processes exit and whose pids get
reused between any two calls), since a real kernel cannot be made to reuse a pid
on demand. Real-process tests live in test_procs_real.py.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.procs import helper

PIDS = (4242, 4243, 4244)


@dataclass(eq=False)
class ModelProcess:
    serial: int
    pid: int
    start_ticks: int
    ignores_term: bool = False
    alive: bool = True


@dataclass
class Handle:
    process: ModelProcess


@dataclass
class ModelTable:
    """A process table where a batch of `events` happens before each call.

    An event is ("exit" | "reuse" | "none", pid); a batch such as exit then reuse
    replaces the process at a pid between two consecutive calls.
    """

    processes: list[ModelProcess]
    events: list[list[tuple[str, int]]]
    pidfd: bool = True
    now_s: float = 0.0
    by_pid: dict[int, ModelProcess] = field(default_factory=dict)
    delivered: list[tuple[ModelProcess, int]] = field(default_factory=list)
    reuse_right_before_kill: set[int] = field(default_factory=set)
    open_handles: int = 0
    serials: int = 100

    def __post_init__(self) -> None:
        self.by_pid = {p.pid: p for p in self.processes}

    def _step(self) -> set[tuple[str, int]]:
        applied = set()
        for kind, pid in self.events.pop(0) if self.events else ():
            current = self.by_pid.get(pid)
            if kind == "exit" and current is not None:
                current.alive = False
                del self.by_pid[pid]
            elif kind == "reuse" and current is None:
                self.serials += 1
                self.by_pid[pid] = ModelProcess(self.serials, pid, 50_000 + self.serials)
            else:
                continue
            applied.add((kind, pid))
        return applied

    def read(self, pid: int) -> dict[str, object] | None:
        self._step()
        process = self.by_pid.get(pid)
        if process is None:
            return None
        return {
            "pid": pid,
            "start_ticks": process.start_ticks,
            "state": "S",
            "ppid": 1,
            "kthread": False,
            "cmdline": ["VLLM::Worker_TP0"],
            "uid": 0,
            "user": "root",
        }

    def open_pidfd(self, pid: int) -> Handle | None:
        self._step()
        process = self.by_pid.get(pid)
        if process is None:
            raise ProcessLookupError(pid)
        if not self.pidfd:
            return None
        self.open_handles += 1
        return Handle(process)

    def _deliver(self, process: ModelProcess, sig: int) -> None:
        self.delivered.append((process, sig))
        if sig == signal.SIGKILL or not process.ignores_term:
            process.alive = False
            self.by_pid.pop(process.pid, None)

    def send_pidfd(self, handle: Handle, sig: int) -> None:
        self._step()
        if not handle.process.alive:
            raise ProcessLookupError(handle.process.pid)
        self._deliver(handle.process, sig)

    def send_pid(self, pid: int, sig: int) -> None:
        if ("reuse", pid) in self._step():
            self.reuse_right_before_kill.add(pid)
        process = self.by_pid.get(pid)
        if process is None:
            raise ProcessLookupError(pid)
        self._deliver(process, sig)

    def has_exited(self, handle: Handle | None, pid: int, start_ticks: int) -> bool:
        self._step()
        if handle is not None:
            return not handle.process.alive
        process = self.by_pid.get(pid)
        return process is None or process.start_ticks != start_ticks

    def close(self, handle: Handle | None) -> None:
        if handle is not None:
            self.open_handles -= 1

    def monotonic(self) -> float:
        return self.now_s

    def sleep(self, seconds: float) -> None:
        self.now_s += seconds
        self._step()


events = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["exit", "reuse", "none"]), st.sampled_from(PIDS)), max_size=3
    ),
    max_size=40,
)
targets = st.lists(st.booleans(), min_size=1, max_size=len(PIDS))


def run(ignores: list[bool], schedule: list[list[tuple[str, int]]], pidfd: bool) -> tuple:  # type: ignore[type-arg]
    originals = [
        ModelProcess(serial, PIDS[serial], 1000 + serial, ignores_term=ignore)
        for serial, ignore in enumerate(ignores)
    ]
    table = ModelTable(list(originals), list(schedule), pidfd=pidfd)
    request = {
        "targets": [
            {"pid": p.pid, "start_ticks": p.start_ticks, "boot_id": "boot", "klass": "leftover"}
            for p in originals
        ],
        "timeout_s": 1.0,
        "kill_wait_s": 0.5,
        "poll_s": 0.25,
    }
    results = helper.kill_targets(request, table, protected=set(), euid=0, current_boot_id="boot")
    return originals, table, results


@settings(max_examples=400, deadline=None)
@given(targets, events)
def test_pidfd_kill_never_signals_another_process(ignores: list[bool], schedule: list) -> None:  # type: ignore[type-arg]
    originals, table, results = run(ignores, schedule, pidfd=True)
    wrong = [(p.serial, sig) for p, sig in table.delivered if p not in originals]
    assert wrong == []
    assert table.open_handles == 0
    for process, result in zip(originals, results, strict=True):
        assert result["outcome"] in ("terminated", "killed", "gone"), result
        if result["outcome"] in ("terminated", "killed"):
            assert not process.alive  # a reported success is a real exit
        if process.ignores_term and result["outcome"] == "killed":
            assert result["signals"] == ["SIGTERM", "SIGKILL"]


@settings(max_examples=400, deadline=None)
@given(targets, events)
def test_fallback_kill_rechecks_right_before_each_signal(
    ignores: list[bool], schedule: list
) -> None:  # type: ignore[type-arg]
    """Without pidfds the only window left is between the re-check and kill() itself."""
    originals, table, results = run(ignores, schedule, pidfd=False)
    wrong_pids = {p.pid for p, _sig in table.delivered if p not in originals}
    assert wrong_pids <= table.reuse_right_before_kill
    assert all("no pidfd" in r["detail"] for r in results if r.get("method"))


def test_the_model_can_catch_a_naive_killer() -> None:
    """Control: kill(pid) after a stale listing does hit the new process in this model."""
    original = ModelProcess(0, PIDS[0], 1000)
    table = ModelTable([original], [[], [("exit", PIDS[0]), ("reuse", PIDS[0])]])
    table.read(PIDS[0])  # the listing's moment; then the worker exits and the pid is reused
    table.send_pid(PIDS[0], signal.SIGTERM)
    assert [p.serial for p, _ in table.delivered] != [original.serial]
    # The state machine, same schedule: not signalled, reported gone.
    schedule = [[], [("exit", PIDS[0]), ("reuse", PIDS[0])]]
    _originals, table, results = run([False], schedule, True)
    assert table.delivered == [] and results[0]["outcome"] == "gone"
