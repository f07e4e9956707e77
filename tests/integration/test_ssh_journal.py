"""The journal follower over SSH: real journalctl behind real sshd servers, direct and jumped.

The journal file is written by systemd-journal-remote on this machine and read on
"the remote box" (this machine again, through sshd). The follower owns the retry:
a cut connection ends the remote stream with HostError, and the follower starts
journalctl again after its last cursor over a fresh connection, so the caller
(the console's log worker) sees one unbroken stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from tests.support.journal_fixtures import JournalWriter, journalctl_pids
from tests.support.sshd_fixtures import SshdPair, SshdServer
from tui.core.config import HostConfig
from tui.hosts.ssh import SSHHost
from tui.logs.journal import JournalFollower, read_journal
from tui.logs.line import Level

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

_DEADLINE_S = 90.0
ROUTES: dict[str, Callable[[SshdPair], HostConfig]] = {
    "direct": lambda pair: pair.host_config(),
    "jump": lambda pair: pair.jump_config(),
}


def _servers(pair: SshdPair, route: str) -> list[SshdServer]:
    """The servers whose connections carry the route (both hops of a jump)."""
    return [pair.first] if route == "direct" else [pair.first, pair.second]


async def _until(predicate: Callable[[], bool], what: str, timeout_s: float = _DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_byte_array_messages_are_decoded_over_ssh(
    sshd: SshdPair, journal_writer: JournalWriter, route: str
) -> None:
    journal_writer.write(
        "(APIServer pid=1) INFO 11-29 16:31:28 [api.py:1] plain line",
        b"\x1b[31mERROR 11-29 16:31:28 [x.py:1] coloured\x1b[0m",
        b"bad \xff byte",
        "a multi\nline entry",
    )
    journal_writer.wait_visible(4)
    host = SSHHost(ROUTES[route](sshd))
    try:
        lines = await read_journal(host, journal_file=str(journal_writer.path), lines=50)
    finally:
        await host.close()
    texts = [line.text for line in lines]
    assert texts == [
        "(APIServer pid=1) INFO 11-29 16:31:28 [api.py:1] plain line",
        "\x1b[31mERROR 11-29 16:31:28 [x.py:1] coloured\x1b[0m",
        "bad \ufffd byte",
        "a multi\nline entry",
    ]
    assert lines[1].level == Level.ERROR
    assert all(line.cursor for line in lines)


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_follow_survives_ten_cut_connections_without_loss_or_repeats(
    sshd: SshdPair, journal_writer: JournalWriter, route: str
) -> None:
    """Lines are appended all the time while the SSH connection is cut ten times.

    Each cut comes only after the follower delivered lines over the new
    connection, so every one of the ten hits a live stream.
    """
    journal_writer.write(*[f"seq {i}" for i in range(20)])
    journal_writer.wait_visible(20)
    host = SSHHost(ROUTES[route](sshd))
    follower = JournalFollower(
        host, journal_file=str(journal_writer.path), initial_lines=1000, retry_delay_s=0.05
    )
    received: list[str] = []
    done_writing = asyncio.Event()
    written = 20

    async def consume() -> None:
        async for line in follower.lines():
            received.append(line.text)

    async def produce() -> None:
        nonlocal written
        while not done_writing.is_set():
            journal_writer.write(*[f"seq {i}" for i in range(written, written + 5)])
            written += 5
            await asyncio.sleep(0.03)

    consumer = asyncio.create_task(consume())
    producer = asyncio.create_task(produce())
    servers = _servers(sshd, route)
    cuts = 0
    started = time.monotonic()
    try:
        for cut in range(10):
            seen = len(received)
            await _until(lambda seen=seen: len(received) >= seen + 10, f"lines before cut {cut}")
            assert follower.reconnects == cut
            # Alternate the hop that is cut on a jump route: outer tunnel, inner session.
            killed = servers[cut % len(servers)].kill_connections()
            assert killed >= 1
            cuts += 1
            await _until(lambda cut=cut: follower.reconnects > cut, f"reconnect after cut {cut}")
        seen = len(received)
        await _until(lambda: len(received) >= seen + 10, "lines after the last cut")
        done_writing.set()
        await producer
        await _until(lambda: len(received) >= written, "every line written")
        await asyncio.sleep(1.0)  # room for a repeat to show up
    finally:
        done_writing.set()
        producer.cancel()
        consumer.cancel()
        await asyncio.gather(producer, consumer, return_exceptions=True)
        await host.close()
    elapsed_s = time.monotonic() - started
    assert cuts == 10 and follower.reconnects == 10
    expected = [f"seq {i}" for i in range(written)]
    missing = sorted(set(expected) - set(received), key=lambda text: int(text.split()[1]))
    assert not missing, f"{len(missing)} lost, first {missing[:5]}"
    assert len(received) == len(set(received)), "a line was repeated"
    assert received == expected
    print(f"{route}: {written} lines, 10 cuts, {elapsed_s:.1f} s")


async def test_a_cut_follow_leaves_no_journalctl_running(
    sshd: SshdPair, journal_writer: JournalWriter
) -> None:
    """The journalctl of a cut session ends (SIGPIPE on its next write); the live one on close."""
    journal_writer.write("first")
    journal_writer.wait_visible(1)
    host = SSHHost(sshd.host_config())
    follower = JournalFollower(host, journal_file=str(journal_writer.path), retry_delay_s=0.05)
    received: list[str] = []

    async def consume() -> None:
        async for line in follower.lines():
            received.append(line.text)

    consumer = asyncio.create_task(consume())
    try:
        await _until(lambda: received == ["first"], "the first line")
        assert sshd.first.kill_connections() >= 1
        journal_writer.write("second")
        await _until(lambda: received == ["first", "second"], "the line after the cut")
        journal_writer.write("third")  # the cut session's journalctl writes, gets EPIPE, exits
        await _until(lambda: len(journalctl_pids(journal_writer.path)) == 1, "one journalctl")
    finally:
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        await host.close()
    await _until(lambda: not journalctl_pids(journal_writer.path), "no journalctl")
