"""The file follower on real files: last N lines, growth, truncation, rotation."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tui.hosts.local import LocalHost
from tui.logs.line import LogLine
from tui.logs.tail import FileFollower, RemoteFileFollower, offset_of_last_lines


@pytest.mark.parametrize("count", [0, 1, 3, 10, 5000])
def test_offset_of_last_lines(count: int) -> None:
    lines = [f"line {i} " + "x" * (i % 300) for i in range(3000)]
    data = ("\n".join(lines) + "\n").encode()
    handle = io.BytesIO(data)
    offset = offset_of_last_lines(handle, count)
    tail = data[offset:].decode().splitlines()
    assert tail == (lines[-count:] if count else [])


async def _collect_until(
    stream: AsyncIterator[LogLine], out: list[str], want: list[str], timeout_s: float = 30.0
) -> None:
    async def run() -> None:
        async for line in stream:
            out.append(line.text)
            if out[-len(want) :] == want:
                return

    await asyncio.wait_for(run(), timeout_s)


async def test_follow_growth_truncation_and_rotation(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("".join(f"old {i}\n" for i in range(100)))
    follower = FileFollower(str(path), initial_lines=3, poll_s=0.02)
    stream = follower.lines()
    got: list[str] = []
    await _collect_until(stream, got, ["old 97", "old 98", "old 99"])
    assert got == ["old 97", "old 98", "old 99"]

    with path.open("a") as handle:
        handle.write("new 1\nnew 2\n")
    await _collect_until(stream, got, ["new 1", "new 2"])

    path.write_text("after truncate\n")  # same inode, smaller size
    await _collect_until(stream, got, ["after truncate"])
    assert follower.truncations == 1

    with path.open("a") as handle:
        handle.write("last words of old file\n")
    os.rename(path, tmp_path / "server.log.1")
    path.write_text("fresh file\n")
    await _collect_until(stream, got, ["fresh file"])
    assert "last words of old file" in got
    assert follower.rotations == 1
    await stream.aclose()  # type: ignore[attr-defined]


async def test_partial_line_waits_for_newline(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("")
    stream = FileFollower(str(path), poll_s=0.02).lines()
    got: list[str] = []
    with path.open("a") as handle:
        handle.write("half")
        handle.flush()
        await asyncio.sleep(0.1)
        handle.write(" and the rest\n")
    await _collect_until(stream, got, ["half and the rest"])
    assert got == ["half and the rest"]
    await stream.aclose()  # type: ignore[attr-defined]


async def test_remote_style_tail_through_host(tmp_path: Path) -> None:
    """`tail -n N -F` through LocalHost: the code path a remote host uses."""
    path = tmp_path / "r.log"
    path.write_text("a\nb\nc\n")
    follower = RemoteFileFollower(LocalHost(), str(path), initial_lines=2)
    stream = follower.lines()
    got: list[str] = []
    await _collect_until(stream, got, ["b", "c"])
    with path.open("a") as handle:
        handle.write("ERROR 11-29 16:00:00 [x.py:1] boom\n")
    await _collect_until(stream, got, ["ERROR 11-29 16:00:00 [x.py:1] boom"])
    await stream.aclose()  # type: ignore[attr-defined]
