"""Temporary simulator state dirs outlive a console killed with SIGKILL: the next start sweeps them.

A box that makes its own `servedeck-sim-*` dir writes an `owner` file naming the
process that made it (pid and start time, so a recycled pid is not mistaken for
it). A later box removes every such dir whose owner is gone, after ending the
simulator's processes that are still alive (identity checked the same way). Those
are the ones pids.log recorded and every process in a session one of them leads:
the server starts in a session of its own, and its engine and workers record
themselves only once they run, so a console killed while they start leaves some
unrecorded, and one of them wrote pids.log into the dir as it was being removed.
Dirs without an owner file, or of another user, are left alone: servedeck cannot
tell whose they are.
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
SWEEP_ROUNDS = 3  # kill, wait and remove again if a process made a file meanwhile


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


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, session id, start ticks) of /proc/PID/stat; None when the pid is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[3]), int(fields[19])


def _session_members(leaders: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """This user's live processes in a session a recorded process led: (pid, start ticks).

    A session's id is its leader's pid, which Linux does not hand out again while the
    session has a member; a session counts only while its id's pid is free or still the
    recorded leader, and only members started no earlier than that leader.
    """
    sessions: dict[int, int] = {}
    for pid, ticks in leaders:
        now = _stat(pid)
        if now is None or now[0] in ("Z", "X") or now[2] == ticks:
            sessions[pid] = ticks
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is None or stat[0] in ("Z", "X") or stat[1] not in sessions:
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid == os.getuid() and stat[2] >= sessions[stat[1]]:
                members.append((int(entry.name), stat[2]))
    return members


def _end_processes(recorded: list[tuple[int, int]]) -> None:
    """SIGKILL a dir's simulator processes and wait (up to KILL_WAIT_S) for them to be gone:
    one still running can write one more file into the dir as it is removed."""
    alive = {proc for proc in recorded if is_alive(*proc)}
    alive.update(_session_members(recorded))
    for pid, _ticks in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline_s = time.monotonic() + KILL_WAIT_S
    while any(is_alive(*proc) for proc in alive) and time.monotonic() < deadline_s:
        time.sleep(0.02)


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
        recorded: list[tuple[int, int]] = []
        for _round in range(SWEEP_ROUNDS):
            # A later round reads what a late process recorded, beside what the first read.
            recorded = sorted({*recorded, *_recorded_processes(state_dir)})
            _end_processes(recorded)
            shutil.rmtree(state_dir, ignore_errors=True)
            if not state_dir.exists():
                break
        removed.append(state_dir)
    return removed
