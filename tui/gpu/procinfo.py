"""Who owns a local GPU process and since when, read from /proc.

NVML gives only a pid and its memory; the pane also wants the user, the age and
the command line. These do not change for a live pid, so they are cached until
the pid leaves the GPU. Inside containers the driver may report host pids that
this /proc does not know: those simply stay unknown (None).
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class LocalProcessDetails:
    command: str
    user: str | None
    started_at_s: float | None


def _boot_time_s(proc_root: Path) -> float | None:
    try:
        for line in (proc_root / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def read_process_details(pid: int, proc_root: Path = Path("/proc")) -> LocalProcessDetails | None:
    """The command line, user and start time of pid, or None when /proc has no such pid."""
    folder = proc_root / str(pid)
    try:
        raw_cmdline = (folder / "cmdline").read_bytes()
        stat_text = (folder / "stat").read_text()
        uid = os.stat(folder).st_uid
    except OSError:
        return None
    command = " ".join(raw_cmdline.replace(b"\0", b" ").decode(errors="replace").split())
    if not command:
        # kernel threads and zombies have no cmdline: fall back to the comm field
        command = stat_text[stat_text.find("(") + 1 : stat_text.rfind(")")]
    started_at_s = None
    boot_s = _boot_time_s(proc_root)
    try:
        # field 22 (starttime, clock ticks since boot) counted after the ")" of comm
        start_ticks = int(stat_text[stat_text.rfind(")") + 2 :].split()[19])
        if boot_s is not None:
            started_at_s = boot_s + start_ticks / os.sysconf("SC_CLK_TCK")
    except (ValueError, IndexError):
        pass
    return LocalProcessDetails(command=command, user=_user_name(uid), started_at_s=started_at_s)


class LocalProcessCache:
    """Details per pid, read once while the pid stays on a GPU."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self._proc_root = proc_root
        self._cache: dict[int, LocalProcessDetails | None] = {}

    def get(self, pid: int) -> LocalProcessDetails | None:
        if pid not in self._cache:
            self._cache[pid] = read_process_details(pid, self._proc_root)
        return self._cache[pid]

    def keep_only(self, live_pids: set[int]) -> None:
        """Forget pids that left every GPU, so a reused pid is read afresh."""
        for pid in [pid for pid in self._cache if pid not in live_pids]:
            del self._cache[pid]
