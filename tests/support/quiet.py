"""Tests that compare timings get the CPU first, also under pytest-xdist.

A test marked `quiet` compares timings (a client against a server's own figures, two
clients, a fault's time to show). With four workers on two cores its processes would
queue for the CPU behind the other workers' tests. For its body, its worker and every
process the worker started (the server under test included, each thread) run at a raised
priority (nice -10), so the other workers' tests take only the CPU it leaves.

Raising a priority needs CAP_SYS_NICE (CI runs as root). Without it the quiet test has
the machine alone instead: every test holds a shared lock on one file for the run's
workers while it runs (setup to teardown); the quiet test takes it exclusively for its
body, which starts once the running tests have ended, and none starts until it is done.
It first takes a gate lock exclusively, which every test passes through before its shared
lock, so tests starting one after another cannot keep it waiting forever. That costs the
other workers their wait. A run without xdist has nothing beside it and does neither.
Either way a vLLM server's engine core has its cores as vLLM left them for the body
(tests/support/vllm_affinity.py: the harness keeps it beside its worker otherwise).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.vllm_affinity import engines_anywhere, threads
from tests.support.vllm_procs import descendants

QUIET_MARK = "quiet"
PRIORITY_NICE = -10


@contextlib.contextmanager
def prioritized(root_pid: int) -> Iterator[bool]:
    """Run root_pid's whole tree at PRIORITY_NICE; yields False (nothing changed) when the
    priority cannot be raised here."""
    before: dict[int, int] = {}
    try:
        tree = [root_pid, *(info.pid for info in descendants(root_pid))]
        for tid in (tid for pid in tree for tid in threads(pid)):
            try:
                nice = os.getpriority(os.PRIO_PROCESS, tid)
                os.setpriority(os.PRIO_PROCESS, tid, PRIORITY_NICE)
            except ProcessLookupError:
                continue
            before[tid] = nice
    except PermissionError:
        _restore(before)
        yield False
        return
    try:
        yield True
    finally:
        _restore(before)


def _restore(before: dict[int, int]) -> None:
    for tid, nice in before.items():
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, tid, nice)


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def machine_share(folder: Path, quiet: bool) -> Iterator[None]:
    """Hold the machine shared (any test) or alone (a quiet test) for the run whose workers
    all lock files in `folder`."""
    gate, running = folder / "gate.lock", folder / "running.lock"
    if quiet:
        with _flock(gate, fcntl.LOCK_EX), _flock(running, fcntl.LOCK_EX):
            yield
        return
    with _flock(gate, fcntl.LOCK_SH):
        pass  # wait here while a quiet test waits for its turn or runs
    with _flock(running, fcntl.LOCK_SH):
        yield


def _run_folder(item: pytest.Item) -> Path | None:
    """This xdist run's folder for the locks; None outside xdist (nothing runs beside).

    An xdist worker's temporary folder is <the run's folder>/popen-gwN: the parent is this
    run's alone (another checkout's run has its own), and pytest removes it later.
    """
    basetemp = item.config.option.basetemp
    if not os.environ.get("PYTEST_XDIST_WORKER") or not basetemp:
        return None
    return Path(basetemp).parent


def _is_quiet(item: pytest.Item) -> bool:
    return item.get_closest_marker(QUIET_MARK) is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Any other test holds the machine shared from its setup to its teardown."""
    folder = _run_folder(item)
    if folder is None or _is_quiet(item):
        yield
        return
    with machine_share(folder, quiet=False):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A quiet test's body runs first on the CPU, or else alone: its fixtures (a server's
    start) are set up and torn down beside the other workers' tests either way."""
    folder = _run_folder(item)
    if not _is_quiet(item):
        yield
        return
    with contextlib.ExitStack() as stack:
        stack.enter_context(engines_anywhere(os.getpid()))
        if folder is not None and not stack.enter_context(prioritized(os.getpid())):
            stack.enter_context(machine_share(folder, quiet=True))
        yield
