"""The engine's stacks from real processes: py-spy, /proc, locally and over a real sshd.

An "engine" here is a real process tree: a root (the unit's main pid) and four children
titled `VLLM::Worker_TPn` (setproctitle, as vLLM titles its workers), each looping in a
function named `all_reduce`; rank 3 is SIGSTOPped. The dump must say where each rank is,
never signal or resume one, and end each fault (a rank gone, py-spy missing, refused,
too slow) as one line on that rank or the dump.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.procs_fixtures import wait_until
from tests.support.sshd_fixtures import SshdPair
from tui.hosts.base import CommandResult
from tui.hosts.local import LocalHost
from tui.hosts.ssh import SSHHost
from tui.ops.engine_stacks import save_dump
from tui.serving.progress.incident import StallIncidents
from tui.serving.progress.model import RankReading
from tui.serving.progress.ranks import read_ranks
from tui.serving.progress.stacks import dump_stacks
from tui.sim.procs import process_state
from tui.summary.incidents import incidents_from_audit

PY_SPY = Path(sys.executable).parent / "py-spy"
RANKS = 4
ENGINE = r"""
import os, subprocess, sys, time
from setproctitle import setproctitle

def all_reduce():
    while True:
        time.sleep(0.05)

if len(sys.argv) > 1:
    setproctitle(f"VLLM::Worker_TP{sys.argv[1]}")
    all_reduce()
children = [subprocess.Popen([sys.executable, __file__, str(r)]) for r in range(RANKS)]
print(" ".join(str(c.pid) for c in children), flush=True)
for child in children:
    child.wait()
""".replace("RANKS", str(RANKS))

pytestmark = pytest.mark.skipif(not PY_SPY.exists(), reason="py-spy not installed (test extra)")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[tuple[int, list[int]]]:
    """(root pid, rank pids), rank 3 SIGSTOPped; every process ended after the test."""
    script = tmp_path / "engine.py"
    script.write_text(ENGINE)
    root = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert root.stdout is not None
    pids = [int(word) for word in root.stdout.readline().split()]
    wait_until(lambda: all(process_state(pid) == "S" for pid in pids), 10)
    time.sleep(0.3)  # setproctitle and the first loop
    os.kill(pids[3], signal.SIGSTOP)
    wait_until(lambda: process_state(pids[3]) in ("T", "t"), 5)
    try:
        yield root.pid, pids
    finally:
        for pid in pids:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        root.kill()
        root.wait()


async def _ranks(host: LocalHost | SSHHost, root_pid: int) -> RankReading:
    ranks = await read_ranks(host, root_pid)
    assert ranks is not None and len(ranks.ranks) == RANKS, ranks
    return ranks


def _check_summary(summary: str) -> None:
    assert "ranks 0-2 in all_reduce" in summary, summary
    assert "rank 3 in all_reduce [do_signal_stop]" in summary, summary


async def test_stacks_per_rank_locally_saved_and_attached(
    engine: tuple[int, list[int]], tmp_path: Path
) -> None:
    root_pid, pids = engine
    host = LocalHost()
    dump = await dump_stacks(host, await _ranks(host, root_pid))
    summary = dump.summary()
    print(f"\nsummary: {summary}")
    _check_summary(summary)
    assert dump.note is None
    # Read-only: the stopped rank is still stopped, the others still run their loop.
    assert process_state(pids[3]) in ("T", "t")
    assert all(process_state(pid) in ("S", "R") for pid in pids[:3])
    root = next(rank for rank in dump.ranks if rank.pid == root_pid)
    assert root.main_thread is not None and root.main_thread.innermost == "_try_wait"
    path = save_dump(dump, tmp_path / "stacks")
    text = path.read_text()
    assert path.name.startswith("stacks-") and f"summary: {summary}" in text
    assert "all_reduce (engine.py:" in text and "--nonblocking" in text
    if os.geteuid() == 0:
        assert "kernel stack:\n    [<0>]" in text  # /proc/PID/stack, root only
    assert save_dump(dump, tmp_path / "stacks") != path  # a second dump never overwrites
    # Attached to the stall incident: an audit record the handoff's Incidents entry names.
    audit = tmp_path / "audit.jsonl"
    incidents = StallIncidents("box", audit_path=audit)
    incidents.attach_stacks(dump.at_s, summary, path)  # no stall open: not an incident
    from tui.core.audit import read_audit

    assert incidents_from_audit(read_audit(audit), "box") == ()
    incidents._stalled = object()  # type: ignore[assignment]  # entered `stalled` (tested in test_progress_*)
    incidents.attach_stacks(dump.at_s, summary, path)
    (entry,) = incidents_from_audit(read_audit(audit), "box")
    assert summary in entry.text and str(path) in entry.text


async def test_stacks_over_ssh(
    engine: tuple[int, list[int]], sshd: SshdPair, private_home: Path
) -> None:
    root_pid, _ = engine
    host = SSHHost(sshd.host_config())
    try:
        dump = await dump_stacks(host, await _ranks(host, root_pid), py_spy=str(PY_SPY))
    finally:
        await host.close()
    _check_summary(dump.summary())


async def test_a_rank_gone_mid_dump_and_a_slow_py_spy(
    engine: tuple[int, list[int]], tmp_path: Path
) -> None:
    root_pid, pids = engine
    host = LocalHost()
    ranks = await _ranks(host, root_pid)
    os.kill(pids[1], signal.SIGKILL)  # read as a rank, gone before its dump
    wait_until(lambda: process_state(pids[1]) in (None, "Z"), 5)
    dump = await dump_stacks(host, ranks)
    gone = next(rank for rank in dump.ranks if rank.pid == pids[1])
    assert gone.error is not None and ("gone" in gone.error or "py-spy" in gone.error), gone
    assert "rank 3 in all_reduce [do_signal_stop]" in dump.summary()
    # A py-spy that hangs (a real process: answers --version, then never ends a dump); a
    # 1 ms deadline on the real one raced py-spy 0.4.3, which can finish a dump that fast.
    hanging = tmp_path / "py-spy"
    hanging.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "py-spy 0.4"; exit 0; }\nsleep 30\n'
    )
    hanging.chmod(0o755)
    slow = await dump_stacks(host, ranks, timeout_s=0.5, py_spy=str(hanging))
    timed_out = [rank.error == "py-spy timed out after 0.5 s" for rank in slow.ranks]
    assert sum(timed_out) >= RANKS - 1, [rank.error for rank in slow.ranks]  # the gone rank: before


async def test_py_spy_missing_says_how_to_install(engine: tuple[int, list[int]]) -> None:
    root_pid, _ = engine
    host = LocalHost()
    dump = await dump_stacks(host, await _ranks(host, root_pid), py_spy="/nonexistent/py-spy")
    assert dump.note is not None and "pip install py-spy" in dump.note
    assert "this machine" in dump.note
    assert all(rank.error == "no py-spy" and rank.wchan for rank in dump.ranks)


class UnprivilegedHost(LocalHost):
    """This machine as user nobody (setpriv): py-spy may not ptrace root's processes."""

    async def run(
        self, argv: Sequence[str], timeout_s: float = 30.0, stdin_text: str | None = None
    ) -> CommandResult:
        wrapped = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        return await super().run(wrapped, timeout_s, stdin_text)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run py-spy as another user")
async def test_py_spy_refused_is_one_line(engine: tuple[int, list[int]]) -> None:
    root_pid, _ = engine
    ranks = await _ranks(LocalHost(), root_pid)
    dump = await dump_stacks(UnprivilegedHost(), ranks, py_spy=str(PY_SPY))
    for rank in dump.ranks:
        assert rank.error is not None and rank.error.startswith("py-spy was refused"), rank
        assert rank.kernel_note == "readable by root only"
    assert "py-spy was refused" in dump.summary()


def test_servedeck_stacks_on_the_demo_and_without_a_unit(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    from tests.support.cli_support import assert_fits, run, write_profile

    done = run(cli_env, "stacks", "--demo")
    assert done.returncode == 0, done.stderr
    summary, saved = done.stdout.strip().splitlines()
    # Every rank in the simulated engine's loop; a rank caught running has no wchan, so the
    # ranks may come in more than one group ("ranks 0-2, 4-7 in run [...], rank 3 in run").
    ranks_part = summary.split(";")[0]
    assert ranks_part.startswith("rank") and ranks_part.count(" in run") >= 1, summary
    assert " in " not in ranks_part.replace(" in run", ""), summary
    path = Path(saved.removeprefix("saved to "))
    assert path.is_relative_to(tmp_path / "data") and summary in path.read_text()
    profile = write_profile(tmp_path, "nounit", 'name = "nounit"\n[host]\nkind = "local"\n')
    refused = run(cli_env, "stacks", "-p", str(profile))
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "servedeck: error: nounit: no [service] unit: no main pid to find the engine by"
    ], refused.stderr
    assert_fits(refused.stderr, "the refusal")
