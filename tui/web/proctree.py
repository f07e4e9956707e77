"""A visitor's process tree, by identity (pid, start ticks), so it can be ended whole.

The console starts processes in new sessions (the demo's simulated service and its
workers), so a process group alone does not reach them: the tree is walked by parent
pid while the console still lives, and a recorded identity is signalled only while
the pid still has the same start time (a reused pid is never hit).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tui.procs.helper import parse_stat

ProcessId = tuple[int, int]  # (pid, start ticks from /proc/PID/stat field 22)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, start ticks), or None when the pid is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        _comm, state, ppid, _sid, _flags, start_ticks = parse_stat(text)
    except (OSError, ValueError, IndexError):
        return None
    return state, ppid, start_ticks


def identity(pid: int) -> ProcessId | None:
    stat = _stat(pid)
    return None if stat is None else (pid, stat[2])


def is_running(process: ProcessId) -> bool:
    """Alive with the same start time; a zombie has ended (only its parent's reap is left)."""
    stat = _stat(process[0])
    return stat is not None and stat[2] == process[1] and stat[0] != "Z"


def descendants(root_pid: int) -> list[ProcessId]:
    """Every live process below root_pid, whatever session it moved to."""
    children: dict[int, list[ProcessId]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None and stat[0] != "Z":
            children.setdefault(stat[1], []).append((int(entry.name), stat[2]))
    found: list[ProcessId] = []
    stack = [root_pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child[0])
    return found


def signal_all(processes: list[ProcessId], signum: signal.Signals) -> int:
    """Signal those still running as recorded; returns how many were signalled."""
    sent = 0
    for process in processes:
        if not is_running(process):
            continue
        try:
            descriptor = os.pidfd_open(process[0])
        except OSError:
            continue
        try:
            if is_running(process):  # re-checked through the pidfd's own pid
                signal.pidfd_send_signal(descriptor, signum)
                sent += 1
        except OSError:
            pass
        finally:
            os.close(descriptor)
    return sent
