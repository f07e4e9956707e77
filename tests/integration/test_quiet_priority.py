"""Quiet tests under root: the worker's whole tree runs first on the CPU for the body."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.quiet import PRIORITY_NICE, prioritized


def test_a_quiet_body_raises_its_whole_tree_then_puts_it_back() -> None:
    """Under root (CI) the worker and what it started run at nice -10 for the body."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with prioritized(os.getpid()) as raised:
            inside = os.getpriority(os.PRIO_PROCESS, child.pid)
        after = os.getpriority(os.PRIO_PROCESS, child.pid)
    finally:
        child.kill()
        child.wait()
    if os.geteuid() != 0:
        assert (raised, inside) == (False, 0)  # not permitted: nothing changed
    else:
        assert (raised, inside) == (True, PRIORITY_NICE)
    assert after == 0 and os.getpriority(os.PRIO_PROCESS, 0) == 0


def test_without_the_right_to_raise_a_priority_nothing_changes() -> None:
    """An unprivileged worker falls back to the lock (the caller's choice on False)."""
    script = (
        "import os, sys; sys.path.insert(0, os.getcwd());"
        "from tests.support.quiet import prioritized;"
        "os.setgid(65534) if os.geteuid() == 0 else None;"
        "os.setuid(65534) if os.geteuid() == 0 else None;"
        "cm = prioritized(os.getpid()); raised = cm.__enter__();"
        "print(raised, os.getpriority(os.PRIO_PROCESS, 0)); cm.__exit__(None, None, None)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["False", "0"], out.stderr
