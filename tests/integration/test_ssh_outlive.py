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
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sshd_fixtures import SshdPair, SshdServer
from tests.support.standin_sshd import standin_sshd
from tui.core.config import HostConfig
from tui.health.xid.decode import XidEvent
from tui.health.xid.follow import FollowState, follow_xids
from tui.hosts.ssh import SSHHost

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

_GONE_WITHIN_S = 5.0
_START_S = 30.0
_BUSES = {"0000:18:00.0": 0}


@pytest.fixture
def standin_box(
    sshd_pair: SshdPair, tmp_path: Path
) -> Iterator[tuple[SshdServer, HostConfig, Path]]:
    """The sshd whose sessions find the stand-in `dmesg` and `journalctl` first on PATH."""
    tools = {
        # Blocks reading (a loop of sleeps), writes nothing: a quiet kernel's `dmesg --follow`.
        "dmesg": "#!/bin/sh\nwhile :; do sleep 1; done\n",
        "journalctl": "#!/bin/sh\necho 'No journal files were found.' >&2\nexit 1\n",
    }
    with standin_sshd(sshd_pair, tmp_path, tools) as (server, config):
        dmesg = tmp_path / "standin-bin" / "dmesg"
        try:
            yield server, config, dmesg
        finally:
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
    standin_box: tuple[SshdServer, HostConfig, Path], cut: str
) -> None:
    server, config, dmesg = standin_box
    host = SSHHost(config)
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
