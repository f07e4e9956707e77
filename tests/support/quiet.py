"""Tests that compare timings get the machine to themselves, also under pytest-xdist.

Under xdist every test holds a shared lock on one file for the run's workers while it
runs (setup to teardown). A test marked `quiet` takes that lock exclusively: it starts
once the tests running on the other workers have ended, and none starts until it is done.
It first takes a gate lock exclusively, which every test passes through before its shared
lock, so tests starting one after another on three workers cannot keep it waiting forever.
A run without xdist has nothing beside it and takes no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

QUIET_MARK = "quiet"


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # An xdist worker's temporary folder is <the run's folder>/popen-gwN: the parent is
    # this run's alone (another checkout's run has its own), and pytest removes it later.
    basetemp = item.config.option.basetemp
    if not os.environ.get("PYTEST_XDIST_WORKER") or not basetemp:
        yield
        return
    folder = Path(basetemp).parent
    with machine_share(folder, quiet=item.get_closest_marker(QUIET_MARK) is not None):
        yield
