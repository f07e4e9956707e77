"""A log file followed over SSH (`tail -F`) survives dropped connections: 0 lost, 0 repeated."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.sshd_fixtures import SshdPair
from tui.hosts.ssh import SSHHost
from tui.logs.tail import RemoteFileFollower

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]


async def _until(predicate: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_log_file_follow_resumes_after_five_cuts(sshd: SshdPair, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {i}\n" for i in range(50)))
    host = SSHHost(sshd.host_config())
    follower = RemoteFileFollower(host, str(log), initial_lines=50, retry_delay_s=0.05)
    received: list[str] = []
    written = 50
    writing = True

    async def consume() -> None:
        async for line in follower.lines():
            received.append(line.text)

    async def produce() -> None:
        nonlocal written
        while writing:
            with log.open("a") as handle:
                handle.write("".join(f"line {i}\n" for i in range(written, written + 3)))
            written += 3
            await asyncio.sleep(0.03)

    consumer = asyncio.create_task(consume())
    # Writing starts once the first stream shows the file: on a loaded machine the login
    # can take long enough for the writer to push the first 50 lines out of tail's view.
    await _until(lambda: bool(received), "the first stream")
    producer = asyncio.create_task(produce())
    try:
        for cut in range(5):
            seen = len(received)
            await _until(lambda seen=seen: len(received) >= seen + 10, f"lines before cut {cut}")
            assert sshd.first.kill_connections() >= 1
            await _until(lambda cut=cut: follower.reconnects > cut, f"reconnect after cut {cut}")
        writing = False
        await producer
        await _until(lambda: received and received[-1] == f"line {written - 1}", "the last line")
        await asyncio.sleep(1.0)  # room for a repeat to show up
    finally:
        writing = False
        consumer.cancel()
        await asyncio.gather(producer, consumer, return_exceptions=True)
        await host.close()
    assert follower.reconnects == 5
    # The first stream shows the last 50 lines as they were when tail started: all of them.
    assert received == [f"line {i}" for i in range(written)]
