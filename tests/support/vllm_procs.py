"""Find and end the processes a test vLLM server leaves, by tree and by env marker.

vLLM runs as API server -> VLLM::EngineCore -> VLLM::Worker plus a
multiprocessing resource_tracker. A SIGKILL of the API server orphans the rest
(reparented to PID 1 or a subreaper), so walking the tree from the server is
not enough: every server started by the tests carries SERVEDECK_TEST_RUN_ID in
its environment, which its children inherit, and strays are found by reading
/proc/PID/environ. Linux only, like vLLM's CPU build.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

RUN_ID_ENV = "SERVEDECK_TEST_RUN_ID"
PROC = Path("/proc")


@dataclass(frozen=True)
class ProcInfo:
    """One live process as read from /proc.

    start_ticks (boot-relative start time) tells a process from a later one
    that got the same pid, so a signal never reaches a stranger.
    """

    pid: int
    ppid: int
    state: str
    cmdline: str
    start_ticks: int


def read_proc(pid: int) -> ProcInfo | None:
    """The process's parent, state and command line; None if it is gone or a zombie."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        raw_cmd = (PROC / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The comm field may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    state, ppid, start_ticks = fields[0], int(fields[1]), int(fields[19])
    if state in ("Z", "X"):
        return None
    cmdline = raw_cmd.replace(b"\0", b" ").decode(errors="replace").strip()
    return ProcInfo(pid=pid, ppid=ppid, state=state, cmdline=cmdline, start_ticks=start_ticks)


def still_running(info: ProcInfo) -> bool:
    """The very process info describes is alive (not a zombie, pid not reused)."""
    now = read_proc(info.pid)
    return now is not None and now.start_ticks == info.start_ticks


def live_pids() -> list[int]:
    return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]


def descendants(root: int) -> list[ProcInfo]:
    """Every live process below root (not root itself), parents before children."""
    children: dict[int, list[ProcInfo]] = {}
    for pid in live_pids():
        info = read_proc(pid)
        if info is not None:
            children.setdefault(info.ppid, []).append(info)
    found: list[ProcInfo] = []
    frontier = [root]
    while frontier:
        kids = children.get(frontier.pop(), [])
        found.extend(kids)
        frontier.extend(kid.pid for kid in kids)
    return found


def processes_with_marker(run_id: str) -> list[ProcInfo]:
    """Live processes whose environment holds SERVEDECK_TEST_RUN_ID=run_id."""
    needle = f"{RUN_ID_ENV}={run_id}".encode()
    found = []
    for pid in live_pids():
        if pid == os.getpid():
            continue
        try:
            environ = (PROC / str(pid) / "environ").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if needle in environ.split(b"\0"):
            info = read_proc(pid)
            if info is not None:
                found.append(info)
    return found


def wait_until_gone(procs: list[ProcInfo], timeout_s: float) -> list[ProcInfo]:
    """Poll until none of procs is alive; return those still alive at the deadline."""
    deadline = time.monotonic() + timeout_s
    alive = [info for info in procs if still_running(info)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [info for info in alive if still_running(info)]
    return alive


def signal_procs(procs: list[ProcInfo], sig: signal.Signals) -> None:
    """Signal each process that is still the one recorded (a pid reuse is skipped)."""
    for info in procs:
        if not still_running(info):
            continue
        try:
            os.kill(info.pid, sig)
        except ProcessLookupError:
            pass


def kill_run(run_id: str, root: int | None = None, grace_s: float = 30.0) -> list[ProcInfo]:
    """End everything of one test run: SIGTERM, wait, then SIGKILL what is left.

    Returns what needed SIGKILL (empty on a clean stop), so callers can report
    it. The tree from root is included in case a child scrubbed its environment.
    """
    targets = {info.pid: info for info in processes_with_marker(run_id)}
    if root is not None:
        targets.update({info.pid: info for info in descendants(root)})
        root_info = read_proc(root)
        if root_info is not None:
            targets[root] = root_info
    signal_procs(list(targets.values()), signal.SIGTERM)
    stubborn = {info.pid: info for info in wait_until_gone(list(targets.values()), grace_s)}
    # Children may have been forked while we waited: sweep the marker again.
    stubborn.update({info.pid: info for info in processes_with_marker(run_id)})
    killed = list(stubborn.values())
    signal_procs(killed, signal.SIGKILL)
    wait_until_gone(killed, 10.0)
    return killed
