"""How the Processes pane orders and filters its rows (no Textual: tested on its own).

Sorts cycle memory (most first; unknown last), pid, class (the order of CLASSES:
the service, then what to clean up), user and SM share (busiest first; unknown last).
The filter is a case-insensitive
substring of the command, user, class or pid: "vllm", "root", "leftover", "4242".
"""

from __future__ import annotations

from collections.abc import Iterable

from tui.procs.model import CLASSES, GpuProcess

SORTS: tuple[str, ...] = ("memory", "pid", "class", "user", "sm")


def next_sort(current: str) -> str:
    """The sort after `current`, round the cycle."""
    index = SORTS.index(current) if current in SORTS else -1
    return SORTS[(index + 1) % len(SORTS)]


def _key(proc: GpuProcess, sort: str) -> tuple[object, ...]:
    if sort == "memory":
        memory = proc.gpu_memory_bytes
        return (memory is None, -(memory or 0), proc.pid)
    if sort == "class":
        rank = CLASSES.index(proc.klass) if proc.klass in CLASSES else len(CLASSES)
        return (rank, proc.pid)
    if sort == "user":
        return (proc.user.lower(), proc.pid)
    if sort == "sm":
        percent = proc.sm_util_percent
        return (percent is None, -(percent or 0.0), proc.pid)
    return (proc.pid,)


def matches(proc: GpuProcess, text: str) -> bool:
    """Whether the filter text is in the process's command, user, class or pid."""
    needle = text.strip().lower()
    if not needle:
        return True
    fields = (proc.command, proc.user, proc.klass, str(proc.pid))
    return any(needle in field.lower() for field in fields)


def ordered(processes: Iterable[GpuProcess], sort: str, text: str = "") -> list[GpuProcess]:
    """The processes the filter keeps, in the sort's order."""
    return sorted((p for p in processes if matches(p, text)), key=lambda p: _key(p, sort))
