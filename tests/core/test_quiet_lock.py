"""Quiet tests: first on the CPU (root), or else alone (a lock the other tests wait on)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.support.quiet import machine_share


def test_a_quiet_test_waits_for_running_ones_and_holds_new_ones_back(tmp_path: Path) -> None:
    events: list[str] = []
    release_first = threading.Event()
    first_holding = threading.Event()

    def running_test() -> None:
        with machine_share(tmp_path, quiet=False):
            events.append("first starts")
            first_holding.set()
            release_first.wait(10)
            events.append("first ends")

    def quiet_test() -> None:
        with machine_share(tmp_path, quiet=True):
            events.append("quiet starts")
            time.sleep(0.2)
            events.append("quiet ends")

    def later_test() -> None:
        with machine_share(tmp_path, quiet=False):
            events.append("later starts")

    first = threading.Thread(target=running_test)
    first.start()
    assert first_holding.wait(10)
    quiet = threading.Thread(target=quiet_test)
    quiet.start()
    time.sleep(0.2)  # the quiet test now holds the gate and waits for the first
    later = threading.Thread(target=later_test)
    later.start()
    time.sleep(0.2)
    assert events == ["first starts"]  # neither the quiet nor the later test started
    release_first.set()
    for thread in (first, quiet, later):
        thread.join(10)
    assert events == ["first starts", "first ends", "quiet starts", "quiet ends", "later starts"]


def test_tests_that_are_not_quiet_run_side_by_side(tmp_path: Path) -> None:
    with machine_share(tmp_path, quiet=False), machine_share(tmp_path, quiet=False):
        pass  # a second shared holder does not wait for the first
