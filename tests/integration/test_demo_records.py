"""The demo keeps its records apart, and a killed console's simulator dirs are swept.

Real processes: `servedeck bench --demo --save` as a command, a console process
killed with SIGKILL while its simulated box runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli_support import REPO, run
from tests.support.summary_helpers import demo_deck
from tui.app import ServedeckApp
from tui.core import paths
from tui.core.audit import append_audit
from tui.core.config import demo_profile
from tui.sim.box import SimBox
from tui.sim.procs import is_alive, start_time_ticks
from tui.sim.sweep import OWNER_FILE, sweep_stale


def test_demo_benchmark_goes_to_the_demos_own_history(cli_env: dict[str, str]) -> None:
    data = Path(cli_env["SERVEDECK_DATA_DIR"])
    result = run(cli_env, "bench", "--demo", "--preset", "quick", "--save")
    assert result.returncode == 0, result.stderr
    demo_history = data / "demo" / "bench_history.jsonl"
    assert demo_history.is_file()
    assert not (data / "bench_history.jsonl").exists()  # the operator's history stays clean
    assert f"saved to {demo_history}" in " ".join(result.stdout.split())


def test_demo_records_block_moves_history_and_audit_and_restores() -> None:
    real_log = paths.log_dir()
    with paths.demo_records():
        append_audit("kill-request", "simulator", {"pid": 1})
        assert paths.data_dir().name == "demo"
    assert (real_log / "demo" / "audit.jsonl").is_file()
    assert not (real_log / "audit.jsonl").exists()
    assert paths.log_dir() == real_log  # only the demo command's lifetime


async def test_console_states_where_the_demo_keeps_records(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory()
    profile = demo_profile()
    with paths.demo_records():
        app = ServedeckApp(profile, demo_deck(box, profile))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("4")
            note = str(app.query_one("#bench-records").render())
            assert str(paths.data_dir()) in note and paths.data_dir().name == "demo"


# -- /tmp/servedeck-sim-* after SIGKILL ----------------------------------------------------
CONSOLE = """
import sys, time
from tui.sim.box import SimBox
box = SimBox(load_seconds=60)
box.start()
print(box.state_dir, flush=True)
time.sleep(600)
"""


def test_the_next_box_sweeps_the_dir_of_a_console_killed_with_sigkill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    child = subprocess.Popen(
        [sys.executable, "-c", CONSOLE],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        stale = Path(child.stdout.readline().strip())
        assert stale.parent == tmp_path and (stale / OWNER_FILE).is_file()
        deadline = time.monotonic() + 60
        while not (stale / "pids.log").is_file():  # the simulator's processes are up
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert stale.is_dir()  # SIGKILL: nobody cleaned up
    unowned = tmp_path / "servedeck-sim-unowned"  # no owner file: not ours to judge
    unowned.mkdir()
    box = SimBox()  # the next start
    try:
        assert box.state_dir.parent == tmp_path
        assert not stale.exists()
        assert unowned.is_dir() and box.state_dir.is_dir()
        # A second box does not sweep the first: its owner (this process) is alive.
        assert sweep_stale(tmp_path) == []
        records = [
            line.split()[:2] for line in (box.state_dir / OWNER_FILE).read_text().splitlines()
        ]
        assert is_alive(int(records[0][0]), int(records[0][1]))
    finally:
        box.close()


# The server leads a session of its own; its engine and workers record themselves in
# pids.log only once they run. A leader that recorded itself, and a child it forked that
# has not yet (it keeps writing into the dir, as a starting worker does).
LEADER = """
import contextlib, os, sys, time
from pathlib import Path
from tui.sim.procs import register_pid
state_dir = Path(sys.argv[1])
register_pid(state_dir, "APIServer")
child = os.fork()
if child == 0:
    while True:
        with contextlib.suppress(OSError):
            (state_dir / "gpu.json").write_text(str(os.getpid()))
        time.sleep(0.01)
print(child, flush=True)
time.sleep(600)
"""


def test_the_sweep_ends_the_processes_a_dead_box_had_not_recorded_yet(tmp_path: Path) -> None:
    stale = tmp_path / "servedeck-sim-starting"
    stale.mkdir()
    (stale / OWNER_FILE).write_text("999999999 1\n")  # an owner that is gone
    leader = subprocess.Popen(
        [sys.executable, "-c", LEADER, str(stale)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdout is not None
    unrecorded = int(leader.stdout.readline())
    ticks = start_time_ticks(unrecorded)
    assert ticks is not None
    try:
        assert str(unrecorded) not in (stale / "pids.log").read_text()
        assert sweep_stale(tmp_path) == [stale]
        assert not is_alive(unrecorded, ticks)
        assert not stale.exists()
    finally:
        with contextlib.suppress(OSError):
            os.killpg(leader.pid, signal.SIGKILL)
        leader.wait(timeout=30)
