"""Temporary simulator state dirs outlive a console killed with SIGKILL: the next start sweeps them.

A box that makes its own `servedeck-sim-*` dir writes an `owner` file naming the
process that made it (pid and start time, so a recycled pid is not mistaken for
it). A later box removes every such dir whose owner is gone, after ending any
simulator process the dir recorded in pids.log that is still alive (identity
checked the same way). Dirs without an owner file, or of another user, are left
alone: servedeck cannot tell whose they are.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from tui.sim.procs import is_alive, start_time_ticks

PREFIX = "servedeck-sim-"
OWNER_FILE = "owner"
KILL_WAIT_S = 2.0  # for the SIGKILLed processes of a dead owner to be gone


def claim(state_dir: Path) -> None:
    """Mark the dir as this process's, so a sweep can tell when its owner is gone."""
    pid = os.getpid()
    (state_dir / OWNER_FILE).write_text(f"{pid} {start_time_ticks(pid)}\n")


def _owner(state_dir: Path) -> tuple[int, int] | None:
    try:
        pid, ticks = (state_dir / OWNER_FILE).read_text().split()[:2]
        return int(pid), int(ticks)
    except (OSError, ValueError):
        return None


def _recorded_processes(state_dir: Path) -> list[tuple[int, int]]:
    found = []
    with contextlib.suppress(OSError):
        for line in (state_dir / "pids.log").read_text().splitlines():
            parts = line.split(" ", 2)
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                found.append((int(parts[0]), int(parts[1])))
    return found


def sweep_stale(root: Path | None = None) -> list[Path]:
    """Remove this user's simulator dirs whose owner process is gone; returns what was removed."""
    folder = Path(root or tempfile.gettempdir())
    removed = []
    for state_dir in sorted(folder.glob(f"{PREFIX}*")):
        try:
            if not state_dir.is_dir() or state_dir.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        owner = _owner(state_dir)
        if owner is None or is_alive(*owner):
            continue
        killed = [
            (pid, ticks) for pid, ticks in _recorded_processes(state_dir) if is_alive(pid, ticks)
        ]
        for pid, _ticks in killed:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        # Gone before the dir goes: a process still running on the other core can write one
        # more file into it, and the removal then leaves the dir behind (seen in a full run).
        deadline_s = time.monotonic() + KILL_WAIT_S
        while any(is_alive(*proc) for proc in killed) and time.monotonic() < deadline_s:
            time.sleep(0.02)
        shutil.rmtree(state_dir, ignore_errors=True)
        removed.append(state_dir)
    return removed
