"""The journal follower against the real journalctl reading a real journal file."""

from __future__ import annotations

import asyncio
import os
import signal

from tests.support.journal_fixtures import JournalWriter, journalctl_pids
from tui.hosts.local import LocalHost
from tui.logs.journal import JournalFollower, read_journal
from tui.logs.journal_entry import decode_message
from tui.logs.line import Level


def test_decode_message_forms() -> None:
    assert decode_message("plain") == "plain"
    assert decode_message(None) == ""
    assert decode_message([104, 105, 255]) == "hi\ufffd"
    assert decode_message([[104], [105]]) == "h\ni"


async def test_byte_array_and_levels(journal_writer: JournalWriter) -> None:
    journal_writer.write(
        "(APIServer pid=1) INFO 11-29 16:31:28 [api.py:1] plain line",
        b"\x1b[31mERROR 11-29 16:31:28 [x.py:1] coloured\x1b[0m",
        b"bad \xff byte",
        "a multi\nline entry",
    )
    journal_writer.write("kernel says no", priority=3)
    journal_writer.wait_visible(5)
    lines = await read_journal(LocalHost(), journal_file=str(journal_writer.path), lines=50)
    texts = [line.text for line in lines]
    assert texts[0].endswith("plain line")
    assert texts[1] == "\x1b[31mERROR 11-29 16:31:28 [x.py:1] coloured\x1b[0m"
    assert texts[2] == "bad \ufffd byte"
    assert texts[3] == "a multi\nline entry"
    assert lines[1].level == Level.ERROR  # read through the ANSI colour
    assert lines[4].level == Level.ERROR and lines[4].priority == 3
    assert all(line.cursor for line in lines)
    assert all(line.timestamp_s and line.timestamp_s > 1e9 for line in lines)


async def test_unit_filter_and_initial_lines(journal_writer: JournalWriter) -> None:
    journal_writer.write(*[f"a{i}" for i in range(5)], unit="a.service")
    journal_writer.write(*[f"b{i}" for i in range(5)], unit="b.service")
    journal_writer.wait_visible(10)
    host = LocalHost()
    tail = await read_journal(host, "b.service", journal_file=str(journal_writer.path), lines=3)
    assert [line.text for line in tail] == ["b2", "b3", "b4"]


async def test_resume_after_cursor(journal_writer: JournalWriter) -> None:
    journal_writer.write(*[f"line {i}" for i in range(6)])
    journal_writer.wait_visible(6)
    host = LocalHost()
    first = await read_journal(host, journal_file=str(journal_writer.path), lines=6)
    follower = JournalFollower(
        host, journal_file=str(journal_writer.path), follow=False, after_cursor=first[2].cursor
    )
    rest = [line.text async for line in follower.lines()]
    assert rest == ["line 3", "line 4", "line 5"]


async def test_no_line_lost_or_repeated_across_ten_kills(journal_writer: JournalWriter) -> None:
    """Append while the follower's journalctl is SIGKILLed ten times; every line arrives once."""
    total = 400
    journal_writer.write(*[f"seq {i}" for i in range(20)])
    journal_writer.wait_visible(20)
    follower = JournalFollower(
        LocalHost(), journal_file=str(journal_writer.path), initial_lines=1000, retry_delay_s=0.05
    )
    received: list[str] = []

    async def consume() -> None:
        async for line in follower.lines():
            received.append(line.text)
            if len(received) >= total:
                return

    async def produce_and_kill() -> int:
        kills = 0
        killed: set[int] = set()
        written = 20
        while written < total:
            batch = [f"seq {i}" for i in range(written, min(written + 25, total))]
            journal_writer.write(*batch)
            written += len(batch)
            if kills < 10:
                pids: list[int] = []
                for _ in range(3000):  # poll until a journalctl not yet killed is up
                    pids = [p for p in journalctl_pids(journal_writer.path) if p not in killed]
                    if pids:
                        break
                    await asyncio.sleep(0.01)
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                kills += 1 if pids else 0
            await asyncio.sleep(0.05)
        return kills

    consumer = asyncio.create_task(consume())
    kills = await produce_and_kill()
    await asyncio.wait_for(consumer, timeout=60)
    assert kills == 10
    assert follower.reconnects >= 10
    assert received == [f"seq {i}" for i in range(total)]
