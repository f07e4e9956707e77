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
    """One live process as read from /proc."""

    pid: int
    ppid: int
    state: str
    cmdline: str


def read_proc(pid: int) -> ProcInfo | None:
    """The process's parent, state and command line; None if it is gone or a zombie."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        raw_cmd = (PROC / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The comm field may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    state, ppid = fields[0], int(fields[1])
    if state in ("Z", "X"):
        return None
    cmdline = raw_cmd.replace(b"\0", b" ").decode(errors="replace").strip()
    return ProcInfo(pid=pid, ppid=ppid, state=state, cmdline=cmdline)


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


def wait_until_gone(pids: list[int], timeout_s: float) -> list[int]:
    """Poll until none of pids is alive; return those still alive at the deadline."""
    deadline = time.monotonic() + timeout_s
    alive = [pid for pid in pids if read_proc(pid) is not None]
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in alive if read_proc(pid) is not None]
    return alive


def signal_pids(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
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
    signal_pids(list(targets), signal.SIGTERM)
    stubborn = wait_until_gone(list(targets), grace_s)
    # Children may have been forked while we waited: sweep the marker again.
    late = [info.pid for info in processes_with_marker(run_id)]
    stubborn = sorted(set(stubborn) | set(late))
    killed = [targets[pid] if pid in targets else read_proc(pid) for pid in stubborn]
    signal_pids(stubborn, signal.SIGKILL)
    wait_until_gone(stubborn, 10.0)
    return [info for info in killed if info is not None]
