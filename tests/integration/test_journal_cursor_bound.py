"""A 1 MiB journal cursor as the last entry (issue 36): the follower does not trust it, says
so once, and resumes from that entry's time, so `logs -f` goes on.

journald writes its own cursors (systemd-journal-remote ignores a `__CURSOR` field in its
input), so no real journal can carry one this long. The test runs the real journalctl on a
real journal file behind a `journalctl` on PATH that passes every argument through and
lengthens one entry's cursor to 1 MiB on its way out: what a broken or hostile host's
stream would show the follower.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import stat
import sys
from pathlib import Path

import pytest

from tests.support.journal_fixtures import JournalWriter, journalctl_pids
from tui.hosts.local import LocalHost
from tui.logs.journal import MAX_CURSOR_CHARS, UNTRUSTED_CURSOR_NOTE, JournalFollower

MARK = "entry with a huge cursor"
SHIM = """\
import json, subprocess, sys
with open({calls!r}, "a") as calls:
    calls.write(json.dumps(sys.argv[1:]) + "\\n")
real = subprocess.Popen([{real!r}, *sys.argv[1:]], stdout=subprocess.PIPE)
for line in real.stdout:
    if {mark!r}.encode() in line:
        entry = json.loads(line)
        entry["__CURSOR"] += ";x=" + "c" * (1024 * 1024)
        line = json.dumps(entry).encode() + b"\\n"
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(real.wait())
"""


def _shim(tmp_path: Path) -> tuple[str, Path]:
    real = shutil.which("journalctl")
    if real is None:
        pytest.skip("journalctl is not installed")
    calls = tmp_path / "calls.jsonl"
    script = tmp_path / "bin" / "journalctl"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\n" + SHIM.format(calls=str(calls), real=real, mark=MARK))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return f"{script.parent}:{os.environ['PATH']}", calls


async def _until(predicate, what: str, timeout_s: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_1_mib_cursor_resumes_from_the_entry_time(
    journal_writer: JournalWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, calls = _shim(tmp_path)
    journal_writer.write("before", MARK)
    journal_writer.wait_visible(2)
    monkeypatch.setenv("PATH", path)  # the follower's journalctl from here on
    follower = JournalFollower(
        LocalHost(), journal_file=str(journal_writer.path), initial_lines=10, retry_delay_s=0.05
    )
    received: list[str] = []

    async def consume() -> None:
        async for line in follower.lines():
            received.append(line.text)

    task = asyncio.create_task(consume())
    try:
        await _until(lambda: MARK in received, "the entry with the huge cursor")
        assert follower.last_cursor is None and follower.resume_since_s is not None
        for pid in journalctl_pids(journal_writer.path):  # the stream ends: a resume
            os.kill(pid, signal.SIGKILL)
        await _until(lambda: follower.reconnects >= 1, "a restart")
        journal_writer.write("after 1", "after 2")
        await _until(lambda: "after 2" in received, "the entries after the resume")
        journal_writer.write(MARK)  # a second untrusted cursor is not said again
        await _until(lambda: received.count(MARK) == 2, "the second huge cursor")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert received == ["before", MARK, UNTRUSTED_CURSOR_NOTE, "after 1", "after 2", MARK]
    argvs = calls.read_text().splitlines()
    assert len(argvs) >= 2 and all(len(argv) < 2 * MAX_CURSOR_CHARS for argv in argvs)
    assert '"--since", "@' in argvs[1] and "--after-cursor" not in argvs[1]
