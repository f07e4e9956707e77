"""The visitor's process tree: found across sessions, signalled only by identity, and
ended whole even when the console ignores quit and SIGTERM.

Real processes: a shell that starts a child in a new session, as the demo's
simulated service does.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest
from textual_serve.download_manager import DownloadManager

from tests.support.browser_support import alive, wait_for
from tui.web import proctree, visit_process

SPAWNER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
print(child.pid, flush=True)
time.sleep(120)
"""


def test_descendants_cross_sessions_and_signals_need_the_same_identity() -> None:
    parent = subprocess.Popen([sys.executable, "-c", SPAWNER], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        tree = proctree.descendants(parent.pid)
        assert child_pid in [pid for pid, _ in tree], "a child in a new session is still found"
        (child,) = [process for process in tree if process[0] == child_pid]

        reused = (child_pid, child[1] + 1)  # same pid, another start time: not our process
        assert not proctree.is_running(reused)
        assert proctree.signal_all([reused], signal.SIGKILL) == 0
        assert alive(child_pid)

        assert proctree.signal_all([child], signal.SIGKILL) == 1
        wait_for(lambda: not alive(child_pid), 10, "the child to end")
        assert not proctree.is_running(child)
        assert proctree.signal_all([child], signal.SIGKILL) == 0, "an ended process is skipped"
    finally:
        parent.kill()
        parent.wait()


# A console that hangs: it speaks the web driver's first words, starts a child in a new
# session, then ignores the quit request and SIGTERM.
HUNG_CONSOLE = r"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
out = sys.stdout.buffer
out.write(b"__GANGLION__\n")
payload = b"hello from a hung console"
out.write(b"D" + len(payload).to_bytes(4, "big") + payload)
out.flush()
time.sleep(120)
"""


async def test_a_console_that_ignores_quit_and_sigterm_is_killed_with_its_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(visit_process, "QUIT_GRACE_S", 1.0)
    monkeypatch.setattr(visit_process, "TERM_GRACE_S", 1.0)
    received: list[bytes] = []

    async def write_bytes(data: bytes) -> None:
        received.append(data)

    async def ignore(*_: object) -> None:
        return None

    process = visit_process.VisitProcess(
        [sys.executable, "-c", HUNG_CONSOLE],
        {},
        write_bytes=write_bytes,
        write_str=ignore,
        close=ignore,
        download_manager=DownloadManager(),
    )
    await process.start(80, 24)
    for _ in range(200):
        if received:
            break
        await asyncio.sleep(0.05)
    assert received == [b"hello from a hung console"]
    for _ in range(100):
        process.remember_tree()
        if len(process.tree) >= 2:
            break
        await asyncio.sleep(0.05)
    tree = list(process.tree)
    assert len(tree) == 2, tree  # the console and its child in another session

    assert await process.stop() == -signal.SIGKILL
    assert not any(alive(pid) for pid, _ in tree)
