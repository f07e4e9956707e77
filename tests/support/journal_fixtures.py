"""A real journal file written by systemd-journal-remote from export-format input.

`JournalWriter` keeps one journal-remote process reading a pipe, so entries
appended during a test land in the file while `journalctl --file F -f` follows it.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

JOURNAL_REMOTE_CANDIDATES = (
    "/lib/systemd/systemd-journal-remote",
    "/usr/lib/systemd/systemd-journal-remote",
)


def journal_remote_binary() -> str | None:
    for candidate in JOURNAL_REMOTE_CANDIDATES:
        if Path(candidate).exists():
            return candidate
    return shutil.which("systemd-journal-remote")


def export_entry(
    message: str | bytes,
    *,
    seq: int,
    unit: str = "vllm.service",
    priority: int = 6,
    extra: str = "",
) -> bytes:
    """One entry in the journal export format; bytes messages use the binary field form.
    `extra`: more `NAME=value` lines, each ending in a newline (see UNIT_STDOUT_FIELDS)."""
    fields = (
        f"__REALTIME_TIMESTAMP={int(time.time() * 1e6)}\n"
        f"__MONOTONIC_TIMESTAMP={seq + 1}\n"
        f"_BOOT_ID={BOOT_ID}\n"
        f"_SYSTEMD_UNIT={unit}\n"
        f"PRIORITY={priority}\n"
        f"{extra}"
    ).encode()
    body = message if isinstance(message, bytes) else message.encode()
    if b"\n" in body or isinstance(message, bytes):
        fields += b"MESSAGE\n" + struct.pack("<Q", len(body)) + body + b"\n"
    else:
        fields += b"MESSAGE=" + body + b"\n"
    return fields + b"\n"


BOOT_ID = uuid.uuid4().hex

# The other fields journald stores with each line a unit writes to stdout (as a real
# vllm.service entry carries them): what `journalctl -o json` prints besides MESSAGE.
UNIT_STDOUT_FIELDS = (
    "_TRANSPORT=stdout\n_STREAM_ID=5f0c1d2e3a4b4c5d9e8f7a6b5c4d3e2f\nSYSLOG_IDENTIFIER=vllm\n"
    "SYSLOG_FACILITY=3\n_PID=41873\n_UID=1001\n_GID=1001\n_COMM=python3\n"
    "_EXE=/usr/bin/python3.11\n_CMDLINE=/opt/vllm/bin/python3 /opt/vllm/bin/vllm serve "
    "/models/Qwen2.5-72B-Instruct --tensor-parallel-size 4 --port 8000\n"
    "_CAP_EFFECTIVE=0\n_SELINUX_CONTEXT=unconfined\n_SYSTEMD_CGROUP=/system.slice/vllm.service\n"
    "_SYSTEMD_SLICE=system.slice\n_SYSTEMD_INVOCATION_ID=0a1b2c3d4e5f40718293a4b5c6d7e8f9\n"
    f"_MACHINE_ID={uuid.uuid4().hex}\n_HOSTNAME=gpu-box-01\n_RUNTIME_SCOPE=system\n"
)


class JournalWriter:
    """A running systemd-journal-remote that appends whatever is written to it."""

    def __init__(self, path: Path) -> None:
        binary = journal_remote_binary()
        if binary is None:
            pytest.skip("systemd-journal-remote is not installed (apt-get install it)")
        self.path = path
        self.count = 0
        self._process = subprocess.Popen(
            [binary, "-o", str(path), "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def write(
        self,
        *messages: str | bytes,
        unit: str = "vllm.service",
        priority: int = 6,
        extra: str = "",
    ) -> None:
        assert self._process.stdin is not None
        data = b"".join(
            export_entry(m, seq=self.count + i, unit=unit, priority=priority, extra=extra)
            for i, m in enumerate(messages)
        )
        self.count += len(messages)
        self._process.stdin.write(data)
        self._process.stdin.flush()

    def wait_visible(self, count: int, timeout_s: float = 30.0) -> None:
        """Poll journalctl until `count` entries are in the file."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.path.exists():
                out = subprocess.run(
                    ["journalctl", "--file", str(self.path), "-o", "cat", "--no-pager"],
                    capture_output=True,
                    check=False,
                )
                if out.stdout.count(b"\n") >= count:
                    return
            time.sleep(0.05)
        raise AssertionError(f"journal never reached {count} entries")

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


@pytest.fixture
def journal_writer(tmp_path: Path) -> Iterator[JournalWriter]:
    writer = JournalWriter(tmp_path / "service.journal")
    yield writer
    writer.close()


def journalctl_pids(journal_path: Path) -> list[int]:
    """Processes running `journalctl ... --file PATH` (found in /proc, not by name)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"journalctl") and str(journal_path).encode() in argv:
            found.append(int(entry))
    return found
