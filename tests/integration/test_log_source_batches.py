"""Log sources hand the console a read at a time, with the lines of line by line (issue 18).

LocalHost.stream_batches against LocalHost.stream on a real process's output (broken
UTF-8, CRLF, empty lines, lines over the 4 MiB stream limit, no final newline); the
journal follower asking journalctl for the fields it reads, and asking again without
`--output-fields` when a journalctl (systemd < 236) refuses it; the file follower's
batches in a flood.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from tests.support.journal_fixtures import JournalWriter
from tui.hosts.base import OVERLONG_LINE, stream_batches
from tui.hosts.local import LocalHost
from tui.logs.journal import JournalFollower, read_journal
from tui.logs.tail import FileFollower

MIB = 1024 * 1024


async def _stream(path: Path) -> list[str]:
    return [line async for line in LocalHost().stream(["cat", str(path)])]


async def _batches(path: Path) -> list[list[str]]:
    return [batch async for batch in stream_batches(LocalHost(), ["cat", str(path)])]


@pytest.mark.parametrize(
    "data",
    [
        b"plain\r\nbroken \xe2\x82\n\xac after a cut\n\n\nlast without newline",
        b"a\n" + b"x" * (5 * MIB) + b"\nafter the long line\n",  # over the limit, then more
        b"x" * (5 * MIB),  # over the limit to the end
        b"y" * (3 * MIB) + b"\n" + b"z" * (3 * MIB) + b"\n",  # under the limit, two reads
        b"\n".join(f"line {i} \xe9".encode() for i in range(50_000)) + b"\n",
    ],
    ids=["tricky", "overlong-then-more", "overlong-at-end", "long-lines", "flood"],
)
async def test_stream_batches_give_the_lines_of_stream(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "out"
    path.write_bytes(data)
    batches = await _batches(path)
    assert [line for batch in batches for line in batch] == await _stream(path)
    assert all(batches)


async def test_stream_batches_mark_each_overlong_line_once(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"a\n" + b"x" * (5 * MIB) + b"\nb\n" + b"y" * (4 * MIB + 10) + b"\nc")
    lines = [line for batch in await _batches(path) for line in batch]
    assert lines == ["a", OVERLONG_LINE, "b", OVERLONG_LINE, "c"]


async def test_a_flood_comes_a_read_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"".join(f"line {i}\n".encode() for i in range(100_000)))
    batches = await _batches(path)
    assert sum(map(len, batches)) == 100_000
    # ~1 MiB in reads of whatever the pipe holds (a page or more), not 100,000 steps
    assert len(batches) < 2_000


async def test_file_follower_batches_a_flood(tmp_path: Path) -> None:
    path = tmp_path / "service.log"
    path.write_text("".join(f"INFO line {i}\n" for i in range(60_000)))
    follower = FileFollower(str(path), initial_lines=60_000, follow=False)
    batches = [batch async for batch in follower.batches()]
    assert [line.text for batch in batches for line in batch] == [
        f"INFO line {i}" for i in range(60_000)
    ]
    assert len(batches) < 20


async def test_the_journal_follower_asks_for_the_fields_it_reads(
    journal_writer: JournalWriter,
) -> None:
    journal_writer.write("first", "second")
    journal_writer.write("an error", priority=3)
    journal_writer.wait_visible(3)
    follower = JournalFollower(LocalHost(), journal_file=str(journal_writer.path), follow=False)
    assert "--output-fields=MESSAGE,PRIORITY" in follower.argv()
    lines = [line async for batch in follower.batches() for line in batch]
    assert [line.text for line in lines] == ["first", "second", "an error"]
    assert [line.priority for line in lines] == [6, 6, 3]
    assert all(line.cursor and line.timestamp_s and line.timestamp_s > 1e9 for line in lines)
    assert follower.last_cursor == lines[-1].cursor


def _old_journalctl(tmp_path: Path, entries: Path) -> dict[str, str]:
    """A `journalctl` on PATH that, like systemd < 236, refuses --output-fields (exit 1)
    and otherwise prints the entries, logging each argv it was given."""
    script = tmp_path / "bin" / "journalctl"
    script.parent.mkdir()
    calls = tmp_path / "calls"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        'for arg in "$@"; do case "$arg" in --output-fields=*)\n'
        "  echo \"journalctl: unrecognized option '$arg'\" >&2; exit 1;; esac; done\n"
        f"cat {entries}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{script.parent}:{os.environ['PATH']}"}


async def test_a_journalctl_without_output_fields_is_asked_again_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = tmp_path / "entries.jsonl"
    entries.write_text(
        '{"__CURSOR": "c1", "MESSAGE": "first", "PRIORITY": "6"}\n'
        '{"__CURSOR": "c2", "MESSAGE": "second", "PRIORITY": "3"}\n'
    )
    monkeypatch.setenv("PATH", _old_journalctl(tmp_path, entries)["PATH"])
    lines = await read_journal(LocalHost(), "vllm.service", lines=10)
    assert [(line.text, line.priority) for line in lines] == [("first", 6), ("second", 3)]
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 2 and "--output-fields" in calls[0] and "--output-fields" not in calls[1]

    (tmp_path / "calls").unlink()
    follower = JournalFollower(LocalHost(), "vllm.service", retry_delay_s=0.01)
    batches = follower.batches()
    got = [line.text for line in await asyncio.wait_for(anext(batches), 30)]
    await batches.aclose()
    assert got == ["first", "second"]
    assert "--output-fields" not in follower.argv()
