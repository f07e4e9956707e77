"""The real-vLLM tier's process cleanup, checked on small real process trees.

A parent that forks a child which ignores SIGTERM stands in for vLLM's
API server -> EngineCore: the fast tier proves orphans are found by the env
marker and ended, so the slow tier's teardown can be trusted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

from tests.support.vllm_procs import (
    RUN_ID_ENV,
    descendants,
    kill_run,
    processes_with_marker,
    read_proc,
)

# The parent starts a child (its own title in argv), waits until the child has
# set up its signal handling, then prints the child's pid.
PARENT = """
import subprocess, sys, time
mode = sys.argv[1]
child_code = "import signal, time\\n"
if mode == "stubborn":
    child_code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
child_code += "print('ready', flush=True)\\ntime.sleep(600)\\n"
child = subprocess.Popen(
    [sys.executable, "-c", child_code, "FAKE::EngineCore"], stdout=subprocess.PIPE, text=True
)
assert child.stdout.readline().strip() == "ready"
print(child.pid, flush=True)
time.sleep(600)
"""


def start_tree(run_id: str, mode: str) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, RUN_ID_ENV: run_id}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True, env=env
    )
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    return parent, child_pid


def wait_for(predicate: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_orphan_of_a_killed_parent_is_found_by_marker_and_ended() -> None:
    run_id = uuid.uuid4().hex
    parent, child_pid = start_tree(run_id, "polite")
    assert [p.pid for p in descendants(parent.pid)] == [child_pid]
    parent.kill()
    parent.wait(timeout=30)
    assert wait_for(lambda: (info := read_proc(child_pid)) is not None and info.ppid != parent.pid)
    assert [p.pid for p in processes_with_marker(run_id)] == [child_pid]

    needed_sigkill = kill_run(run_id, grace_s=30.0)
    assert needed_sigkill == []
    assert read_proc(child_pid) is None
    assert processes_with_marker(run_id) == []


def test_process_ignoring_sigterm_is_sigkilled_and_reported() -> None:
    run_id = uuid.uuid4().hex
    parent, child_pid = start_tree(run_id, "stubborn")
    try:
        killed = kill_run(run_id, root=parent.pid, grace_s=1.0)
        assert [p.pid for p in killed] == [child_pid]
        assert "FAKE::EngineCore" in killed[0].cmdline
        assert read_proc(child_pid) is None
    finally:
        parent.kill()
        parent.wait(timeout=30)
    assert parent.returncode == -signal.SIGTERM


def test_marker_search_ignores_other_runs() -> None:
    mine, other = uuid.uuid4().hex, uuid.uuid4().hex
    parent, _ = start_tree(other, "polite")
    try:
        assert processes_with_marker(mine) == []
        assert {p.pid for p in processes_with_marker(other)} >= {parent.pid}
    finally:
        kill_run(other, root=parent.pid, grace_s=30.0)
        parent.wait(timeout=30)
