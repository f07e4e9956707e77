"""LocalHost: argv is never re-parsed by a shell; streams and timeouts end their process."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tui.core.errors import CommandTimeout, HostError
from tui.hosts import LocalHost

TRICKY_ARGV = [
    "printf",
    "%s|",
    "a b",
    "it's",
    '"quoted"',
    "*",
    "$HOME",
    "back\\slash",
    "semi;colon",
    "new\nline",
]


async def test_run_passes_argv_verbatim() -> None:
    result = await LocalHost().run(TRICKY_ARGV)
    assert result.ok
    assert result.stdout == "|".join(TRICKY_ARGV[2:]) + "|"


async def test_run_with_stdin_script_and_exit_status() -> None:
    result = await LocalHost().run(["/bin/sh", "-s"], stdin_text="echo out; echo err >&2; exit 3\n")
    assert (result.exit_status, result.stdout, result.stderr) == (3, "out\n", "err\n")


async def test_missing_command_is_a_host_error() -> None:
    with pytest.raises(HostError, match="command not found: no-such-binary"):
        await LocalHost().run(["no-such-binary"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


async def test_timeout_ends_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 300 & echo $! > {pid_file}; wait\n"
    with pytest.raises(CommandTimeout, match="ran past"):
        await LocalHost().run(["/bin/sh", "-s"], timeout_s=1.0, stdin_text=script)
    child = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        await asyncio.sleep(0.1)
    assert not _alive(child)


async def test_cancelled_stream_leaves_no_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "stream.pid"
    host = LocalHost()
    argv = ["/bin/sh", "-c", f"echo $$ > {pid_file}; while true; do echo tick; sleep 0.05; done"]
    lines = []
    stream = host.stream(argv)
    async for line in stream:
        lines.append(line)
        if len(lines) == 3:
            break
    await stream.aclose()
    assert lines == ["tick"] * 3
    pid = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(pid):
            break
        await asyncio.sleep(0.1)
    assert not _alive(pid)


async def test_read_file_bounded_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b"x" * 1000)
    host = LocalHost()
    assert await host.read_file(str(path), max_bytes=10) == b"x" * 10
    with pytest.raises(HostError, match="cannot read"):
        await host.read_file(str(tmp_path / "nope"))
