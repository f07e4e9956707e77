"""Nothing the console starts on a host outlives its connection.

The XID follower's `dmesg --follow` writes only when the kernel logs a line, so no broken
pipe ends it when its SSH connection goes. Its own sshd here (the pair's, with a PATH
whose `dmesg` is a stand-in that blocks and writes nothing, and whose `journalctl` says
the journal is missing, so the follower takes the dmesg path as on a box without one):
the follower is started over SSH, the connection is cut, and the stand-in must be gone
within a few seconds with no kernel line having arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.sshd_fixtures import SshdPair, SshdServer
from tui.health.xid import XidEvent
from tui.health.xid_follow import FollowState, follow_xids
from tui.hosts.ssh import SSHHost

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

_GONE_WITHIN_S = 5.0
_START_S = 30.0
_BUSES = {"0000:18:00.0": 0}


@pytest.fixture
def standin_sshd(sshd_pair: SshdPair, tmp_path: Path) -> Iterator[tuple[SshdServer, Path]]:
    """An sshd whose sessions find the stand-in `dmesg` and `journalctl` first on PATH."""
    bin_dir = tmp_path / f"standin-{uuid.uuid4().hex}"
    bin_dir.mkdir()
    dmesg = bin_dir / "dmesg"
    # Blocks reading (a loop of sleeps), writes nothing: a quiet kernel's `dmesg --follow`.
    dmesg.write_text("#!/bin/sh\nwhile :; do sleep 1; done\n")
    journalctl = bin_dir / "journalctl"
    journalctl.write_text("#!/bin/sh\necho 'No journal files were found.' >&2\nexit 1\n")
    for tool in (dmesg, journalctl):
        tool.chmod(0o755)
    tmp_path.chmod(0o755)
    server = SshdServer("outlive", tmp_path / "sshd", sshd_pair.first.authorized_keys)
    server.prepare()
    config = server.root / "sshd_config"
    path = f"{bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    config.write_text(config.read_text() + f"SetEnv PATH={path}\n")
    server.start()
    try:
        yield server, dmesg
    finally:
        server.stop()
        for pid in _running(dmesg):  # what a failed test left on the "host"
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _running(script: Path) -> list[int]:
    """Live (not zombie) processes running the stand-in script, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(script).encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


async def _until(predicate: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        await asyncio.sleep(0.1)
    return False


@pytest.mark.parametrize("cut", ["sshd session killed", "client connection dropped"])
async def test_a_cut_ends_the_xid_follower_on_the_host(
    sshd_pair: SshdPair, standin_sshd: tuple[SshdServer, Path], cut: str
) -> None:
    server, dmesg = standin_sshd
    known_hosts = server.root / "known_hosts"
    known_hosts.write_text(server.known_hosts_line())
    host = SSHHost(replace(sshd_pair.host_config(), port=server.port, known_hosts=str(known_hosts)))
    events: list[XidEvent] = []
    states: list[FollowState] = []
    task = asyncio.create_task(follow_xids(host, _BUSES, events.append, states.append))
    try:
        assert await _until(lambda: _running(dmesg), _START_S), "the stand-in dmesg never ran"
        before = set(_running(dmesg))
        if cut == "sshd session killed":
            assert server.kill_connections() >= 1
        else:  # the console's terminal closed: its TCP connection ends with no goodbye
            host._chain[-1]._transport.abort()
        gone = await _until(lambda: not before & set(_running(dmesg)), _GONE_WITHIN_S)
        assert gone, f"dmesg still running on the host {_GONE_WITHIN_S:g} s after the cut"
        assert events == []  # no kernel line arrived to end it
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await host.close()
