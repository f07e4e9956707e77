"""Real processes for the process-killer tests: orphaned "vLLM workers" and zombies.

An orphan is made the way a leftover vLLM worker is: a double fork with setsid
whose middle process exits, so the worker is reparented. Reparenting is made
deterministic by a small subreaper process (PR_SET_CHILD_SUBREAPER via ctypes)
that adopts the worker, the way systemd --user or tini would. The worker
renames itself with setproctitle so its cmdline reads like `VLLM::Worker_TP0`.
Every process is ended at teardown through a pidfd opened while it was known.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.systemctl_standin import (
    SYSTEMCTL_STANDIN,
    unit_show_text,
    unit_user_field,
    write_systemctl,
)
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample

# Re-exported: the tests name the stand-in through this module.
__all__ = ["SYSTEMCTL_STANDIN", "unit_show_text", "unit_user_field"]

ORPHAN_SCRIPT = r"""
import ctypes, os, signal, sys, time
import setproctitle
title, ignore_term, hold_path = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
own_subreaper = sys.argv[4] == "own"
PR_SET_CHILD_SUBREAPER = 36
if own_subreaper and ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
setproctitle.setproctitle("servedeck-test-subreaper")
read_end, write_end = os.pipe()
middle = os.fork()
if middle == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(read_end)
        setproctitle.setproctitle(title)
        if ignore_term:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        held = open(hold_path, "rb") if hold_path else None
        os.write(write_end, b"%d\n" % os.getpid())
        os.close(write_end)
        while True:
            time.sleep(3600)
    os._exit(0)
os.close(write_end)
os.waitpid(middle, 0)
print(os.read(read_end, 64).decode().strip(), flush=True)
while True:  # reap what we adopt, like an init
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.05)
"""

ZOMBIE_SCRIPT = r"""
import os, sys, time
child = os.fork()
if child == 0:
    os._exit(0)
print(child, flush=True)
while True:
    time.sleep(3600)  # never reaps: the child stays defunct
"""


PR_SET_CHILD_SUBREAPER = 36
# The GPU "source" the CLI sees in tests: the usages naming test processes that still run.
GPU_HINTS: list[GpuProcessUsage] = []


class HintGpuSource:
    """Stands in for the simulator's GPU source (not merged yet): no GPU exists here."""

    name = "test-hints"

    async def sample(self) -> GpuBoxSnapshot:
        alive = tuple(u for u in GPU_HINTS if proc_state(u.pid) not in (None, "Z"))
        samples = tuple(
            GpuSample(
                i,
                sum(u.used_memory_bytes or 0 for u in alive if u.gpu_index == i),
                96 * 1024**3,
                processes=tuple(u for u in alive if u.gpu_index == i),
            )
            for i in sorted({u.gpu_index for u in GPU_HINTS} | {0})
        )
        return GpuBoxSnapshot("simulated", time.time(), samples=samples, simulated=True)

    async def aclose(self) -> None:
        return None


@dataclass
class Orphan:
    pid: int
    subreaper_pid: int
    pidfd: int

    def alive(self) -> bool:
        return proc_state(self.pid) not in (None, "Z")


def proc_state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()[0]


def wait_until(predicate: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _end(pidfd: int) -> None:
    with contextlib.suppress(ProcessLookupError, OSError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.close(pidfd)


@pytest.fixture
def spawn_orphan() -> Iterator[Callable[..., Orphan]]:
    """spawn_orphan(title, ignore_term=False, hold_path="", adopted_by_test=False) -> Orphan.

    By default a subreaper child process adopts the worker; with adopted_by_test the
    test process itself becomes the subreaper (prctl) and adopts it, as a console
    running as a subreaper would.
    """
    reapers: list[subprocess.Popen[str]] = []
    orphans: list[Orphan] = []
    libc = ctypes.CDLL(None, use_errno=True)
    adopted: list[int] = []

    def spawn(
        title: str, ignore_term: bool = False, hold_path: str = "", adopted_by_test: bool = False
    ) -> Orphan:
        if adopted_by_test and not adopted:
            assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        mode = "parent" if adopted_by_test else "own"
        reaper = subprocess.Popen(
            [
                sys.executable,
                "-c",
                ORPHAN_SCRIPT,
                title,
                "1" if ignore_term else "0",
                hold_path,
                mode,
            ],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        reapers.append(reaper)
        assert reaper.stdout is not None
        pid = int(reaper.stdout.readline())
        subreaper = os.getpid() if adopted_by_test else reaper.pid
        orphan = Orphan(pid=pid, subreaper_pid=subreaper, pidfd=os.pidfd_open(pid))
        orphans.append(orphan)
        if adopted_by_test:
            adopted.append(pid)
        assert wait_until(lambda: _cmdline(pid).startswith(title)), _cmdline(pid)
        return orphan

    yield spawn
    for orphan in orphans:
        _end(orphan.pidfd)
    for pid in adopted:  # ours to reap now
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    if adopted:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    for reaper in reapers:
        reaper.kill()
        reaper.wait(timeout=30)
    GPU_HINTS.clear()


@pytest.fixture
def spawn_zombie() -> Iterator[Callable[[], tuple[int, int]]]:
    """spawn_zombie() -> (zombie pid, parent pid); the parent never reaps it."""
    parents: list[subprocess.Popen[str]] = []

    def spawn() -> tuple[int, int]:
        parent = subprocess.Popen(
            [sys.executable, "-c", ZOMBIE_SCRIPT], stdout=subprocess.PIPE, text=True
        )
        parents.append(parent)
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert wait_until(lambda: proc_state(child) == "Z")
        return child, parent.pid

    yield spawn
    for parent in parents:
        parent.kill()
        parent.wait(timeout=30)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


# A leftover the way vLLM leaves one: double fork, the middle exits, the worker is
# reparented to PID 1 and keeps its `VLLM::Worker_TP0` title.
_PID1_ORPHAN = r"""
import os, sys, time
import setproctitle
read_end, write_end = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        setproctitle.setproctitle(sys.argv[1])
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.write(write_end, b"%d\n" % os.getpid())
        while True:
            time.sleep(3600)
    os._exit(0)
os.close(write_end)
print(os.read(read_end, 64).decode().strip(), flush=True)
"""


# Where the test units' services run (WorkingDirectory=): their orphans are started there.
SERVICE_DIR = str(Path(__file__).resolve().parent)


def spawn_pid1_orphan(
    python: str = sys.executable, cwd: str = SERVICE_DIR, title: str = "VLLM::Worker_TP0"
) -> tuple[int, int]:
    """A real orphaned `VLLM::Worker_TP0` under PID 1, run from SERVICE_DIR as the test
    units' service would be (or by another interpreter, from another directory): (pid,
    pidfd to end it by)."""
    out = subprocess.run(
        [python, "-c", _PID1_ORPHAN, title],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    pid = int(out.stdout.strip())
    return pid, os.pidfd_open(pid)


def install_systemctl(monkeypatch: pytest.MonkeyPatch, folder: Path, show_text: str) -> Path:
    """Put the stand-in systemctl first on PATH; returns its folder."""
    bin_dir = write_systemctl(folder, show_text)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir


def service_profile(
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    unit: str = "servedeck-test-vllm.service",
    port: int = 8000,
    active_state: str = "inactive",
    working_directory: str | None = None,
    exec_start: tuple[str, ...] = (),
) -> Path:
    """A profile whose unit (answered by the stand-in) runs as this test's user from this
    test's directory: the proof that the test's own orphaned workers are its leftovers."""
    user = unit_user_field()
    where = os.getcwd() if working_directory is None else working_directory
    show = unit_show_text(unit, active_state, user, where, exec_start)
    install_systemctl(monkeypatch, folder, show)
    profile = folder / "service.toml"
    profile.write_text(
        f'[service]\nengine = "vllm"\nunit = "{unit}"\nbase_url = "http://127.0.0.1:{port}"\n'
    )
    return profile


def own_unit_shape() -> dict[str, str]:
    """ClassifyContext fields saying the unit runs as this test's user from its directory."""
    return {"unit_user": pwd.getpwuid(os.geteuid()).pw_name, "unit_dir": os.getcwd()}
