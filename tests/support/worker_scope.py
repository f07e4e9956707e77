"""Under pytest-xdist, a real Deck sees only the processes of its own worker.

Tests on one machine share its process table. A real Deck (local, or over SSH to
127.0.0.1) lists every orphan matching its patterns on the machine, as it must on a
real box; here those include other workers' leftovers (a simulated box's, a crashed
vLLM server's), which a test would then list, count or even end. So each worker gives
itself an audit login uid of its own (/proc/self/loginuid): every process it starts
inherits it, through setsid, reparenting to PID 1, a new process title (which wipes
the environment a marker variable would live in) and the test sshd's sessions
(no PAM: nothing sets it again). `Deck.process_scope` is the set of processes with
this worker's login uid. A simulated box keeps its own scope (the pids it started).
A serial run, or a machine that refuses the write, scopes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Far above any real uid, unique per worker process on this machine (pid_max <= 2**22).
LOGINUID_BASE = 3_900_000_000


def read_loginuid(pid: int | str, proc: Path = Path("/proc")) -> int | None:
    try:
        return int((proc / str(pid) / "loginuid").read_text())
    except (OSError, ValueError):
        return None


def set_own_loginuid(value: int) -> bool:
    """Give this process (and all it starts from now on) an audit login uid."""
    try:
        Path("/proc/self/loginuid").write_text(str(value))
    except OSError:
        return False
    return read_loginuid("self") == value


def pids_with_loginuid(value: int, proc: Path = Path("/proc")) -> tuple[int, ...]:
    """Live pids whose audit login uid is `value`."""
    return tuple(
        int(entry.name)
        for entry in proc.iterdir()
        if entry.name.isdigit() and read_loginuid(entry.name, proc) == value
    )


_scope_uid: int | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _scope_uid
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    value = LOGINUID_BASE + os.getpid()
    _scope_uid = value if set_own_loginuid(value) else None


def worker_scope_pids() -> tuple[int, ...] | None:
    """This worker's processes, for a ClassifyContext a test builds itself; None: all."""
    return None if _scope_uid is None else pids_with_loginuid(_scope_uid)


@pytest.fixture(autouse=True)
def worker_process_scope(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if _scope_uid is not None:
        monkeypatch.setattr("tui.deck.Deck.process_scope", lambda deck: worker_scope_pids())
    yield
