"""One recorder per recording: an exclusive flock on `<db>.lock` that names its holder.

flock is released by the kernel when the holder dies (even by kill -9), so a
stale lock never needs cleaning up; the holder's description is only advice.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from tui.record.schema import RecordingError


class RecorderBusy(RecordingError):
    """Another recorder holds this recording."""


def lock_path_for(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


def describe_holder(path: Path) -> str:
    """`pid 123 (servedeck record) on box since 03:12:00`, or a plain note if unreadable."""
    try:
        holder = json.loads(path.read_text())
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(holder["since_s"])))
        return f"pid {holder['pid']} ({holder['what']}) on {holder['host']} since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


class RecordLock:
    """Held from acquire() to release(); the lock file stays, its content names the holder."""

    def __init__(self, db_path: Path, what: str = "") -> None:
        self.path = lock_path_for(db_path)
        self.what = what or " ".join(os.path.basename(arg) for arg in sys.argv[:2]) or "servedeck"
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:  # e.g. the data dir is a file: a state, not a crash
            raise RecordingError(f"{self.path.parent}: {error.strerror or error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RecorderBusy(
                f"{self.path.with_suffix('')}: already being recorded by "
                f"{describe_holder(self.path)}"
            ) from None
        holder = {
            "pid": os.getpid(),
            "what": self.what,
            "host": socket.gethostname(),
            "since_s": time.time(),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None
