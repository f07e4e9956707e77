"""The worker scope that keeps xdist workers out of each other's process listings
(tests/support/worker_scope.py): a login uid that all a worker starts inherits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.procs_fixtures import wait_until
from tests.support.sshd_fixtures import SshdPair
from tests.support.worker_scope import LOGINUID_BASE, pids_with_loginuid, read_loginuid
from tui.hosts.ssh import SSHHost

REPO = Path(__file__).resolve().parents[2]

# Takes a login uid of its own, then starts what is to be scoped: a plain child and a
# titled orphan of PID 1 (double fork, setsid, a new title that wipes the environment).
STARTER = r"""
import subprocess, sys, time
sys.path.insert(0, sys.argv[2])
from tests.support.procs_fixtures import spawn_pid1_orphan
from tests.support.worker_scope import set_own_loginuid
if not set_own_loginuid(int(sys.argv[1])):
    print("refused", flush=True)
    sys.exit(0)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
orphan, _fd = spawn_pid1_orphan()
print(child.pid, orphan, flush=True)
time.sleep(60)
"""


def test_the_scope_holds_children_and_titled_orphans_of_pid1() -> None:
    if read_loginuid("self") is None:
        pytest.skip("no /proc/self/loginuid here (a kernel without audit)")
    value = LOGINUID_BASE + 2**23 + os.getpid()  # above any worker's value
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(value), str(REPO)], stdout=subprocess.PIPE, text=True
    )
    assert starter.stdout is not None
    words = starter.stdout.readline().split()
    if words == ["refused"]:
        starter.wait(timeout=30)
        pytest.skip("this machine refuses to set a login uid (no CAP_AUDIT_CONTROL)")
    child, orphan = (int(word) for word in words)
    try:
        assert read_loginuid(orphan) == value  # through setsid, the new title and PID 1
        # The orphan's short-lived parents end (and are reaped) on their own time.
        expected = {starter.pid, child, orphan}
        assert wait_until(lambda: set(pids_with_loginuid(value)) == expected, timeout_s=10.0)
    finally:
        for pid in (orphan, child, starter.pid):
            os.kill(pid, signal.SIGKILL)
        starter.wait(timeout=30)


async def test_ssh_sessions_keep_the_login_uid_of_whoever_started_sshd(sshd: SshdPair) -> None:
    """The test sshd runs without PAM: its sessions are in the worker's scope too."""
    host = SSHHost(sshd.host_config())
    try:
        result = await host.run(["cat", "/proc/self/loginuid"])
    finally:
        await host.close()
    if read_loginuid("self") is None:
        pytest.skip("no /proc/self/loginuid here (a kernel without audit)")
    assert int(result.stdout) == read_loginuid("self")
