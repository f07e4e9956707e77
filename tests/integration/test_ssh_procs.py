"""The process killer over SSH: a stopped simulator's orphaned workers, listed and ended
through real sshd servers by the helper script running on "the remote box".

The box is this machine reached through sshd (direct, or jump A -> B); the GPU pid
hints come from the SimBox's own snapshot (SimGpuSource), the way a real box's
nvidia-smi would name the orphans. No subreaper is set up: on stop the simulator's
orphans are reparented to PID 1, exactly as on a real box (checked below).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.procs_fixtures import wait_until
from tests.support.sim_fixtures import FAST_OPTIONS
from tests.support.sshd_fixtures import SshdPair
from tui.core.audit import read_audit
from tui.core.config import HostConfig, Profile
from tui.hosts.ssh import SSHHost
from tui.procs import ClassifyContext, context_for, kill_processes, leftovers, list_gpu_processes
from tui.sim.box import SimBox
from tui.sim.gpu_source import SimGpuSource
from tui.sim.procs import is_alive

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

ORPHANS = 2
ROUTES: dict[str, Callable[..., HostConfig]] = {
    "direct": lambda pair, **changes: pair.host_config(**changes),
    "jump": lambda pair, **changes: pair.jump_config(**changes),
}


def _ppid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


@pytest.fixture
def orphaned_box(sim_box_factory: Callable[..., SimBox]) -> Iterator[SimBox]:
    """A simulator that was serving and then stopped, leaving two workers holding GPU memory."""
    box = sim_box_factory(replace(FAST_OPTIONS, orphans_on_stop=ORPHANS))
    box.start()
    assert box.wait_until_active(timeout_s=120) == "active", box.log_path.read_text()[-2000:]
    box.stop()
    assert box.unit.wait_for_state("inactive", 30) == "inactive"
    left = wait_until(lambda: len(box.live_processes()) == ORPHANS, 60.0)
    assert left, f"expected {ORPHANS} orphans, live: {box.live_processes()}"
    yield box


def _orphan_pids(box: SimBox) -> set[int]:
    return {pid for pid, role in box.live_processes() if role.startswith("VLLM::Worker")}


def _profile(config: HostConfig) -> Profile:
    return Profile(name="ssh-procs", host=config)


def _context(config: HostConfig, host: SSHHost, box: SimBox) -> ClassifyContext:
    """The box's record of what it started proves its orphans are its leftovers (what a
    SimDeck's owned_processes gives; given by hand here, where the box is a plain SSH host)."""
    owned = tuple((pid, ticks) for pid, ticks, _role in box.started_processes())
    return replace(context_for(_profile(config), host), owned=owned)


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_root_lists_orphans_as_leftovers_and_ends_them(
    sshd: SshdPair, orphaned_box: SimBox, route: str
) -> None:
    config = ROUTES[route](sshd)
    host = SSHHost(config)
    gpu = SimGpuSource(orphaned_box)
    orphans = _orphan_pids(orphaned_box)
    assert len(orphans) == ORPHANS
    # How they were reparented here: PID 1, the way a real box's systemd adopts them.
    assert {_ppid(pid) for pid in orphans} == {1}
    context = _context(config, host, orphaned_box)
    assert context.console_pid is None  # a remote host: the console's tree is not there
    try:
        listing = await list_gpu_processes(host, await gpu.sample(), context)
        assert listing.host_label == config.route
        assert listing.euid == 0
        # Leftovers include every orphan matching the patterns, with or without GPU
        # memory: on a shared machine other simulators' orphans may be listed too.
        found = {proc.pid: proc for proc in listing.processes if proc.pid in orphans}
        assert set(found) == orphans
        for proc in found.values():
            assert proc.klass == "leftover", proc.reason
            assert "parent 1" in proc.reason and proc.command.startswith("VLLM::Worker_TP")
            assert proc.gpu_memory_bytes and proc.gpu_memory_bytes > 10 * 1024**3
        held_bytes = sum(proc.gpu_memory_bytes or 0 for proc in found.values())

        report = await kill_processes(
            host,
            [proc for proc in leftovers(listing.processes) if proc.pid in orphans],
            context,
            read_only=False,
            timeout_s=10.0,
            reread=gpu.sample,
        )
    finally:
        await host.close()
    assert report.host_label == config.route
    assert {o.outcome for o in report.outcomes} == {"terminated"}, report.outcomes
    assert all(o.method == "pidfd" for o in report.outcomes)
    assert report.freed_bytes == held_bytes
    assert wait_until(lambda: not any(is_alive(pid) for pid in orphans), 60.0)
    assert all(s.memory_used_bytes == 0 for s in orphaned_box.snapshot().samples)

    records = list(read_audit())
    assert [r["event"] for r in records] == ["kill-request", "kill-outcome"]
    assert {r["host"] for r in records} == {config.route}
    assert {t["pid"] for t in records[0]["targets"]} == orphans
    assert {o["outcome"] for o in records[1]["outcomes"]} == {"terminated"}
    assert records[1]["freed_bytes"] == held_bytes
    if route == "jump":
        assert " via " in records[0]["host"]


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_zsh_user_lists_but_may_not_kill_roots_orphans(
    sshd: SshdPair, orphaned_box: SimBox, route: str
) -> None:
    """A login-shell user that is not root sees the listing; signalling root's workers is
    refused by the helper with the reason, and nothing is sent."""
    if sshd.zsh_user is None:
        pytest.skip("the zsh login-shell user exists only when the tests run as root")
    config = ROUTES[route](sshd, user=sshd.zsh_user)
    host = SSHHost(config)
    gpu = SimGpuSource(orphaned_box)
    orphans = _orphan_pids(orphaned_box)
    context = _context(config, host, orphaned_box)
    try:
        listing = await list_gpu_processes(host, await gpu.sample(), context)
        assert listing.euid != 0
        # Leftovers include every orphan matching the patterns, with or without GPU
        # memory: on a shared machine other simulators' orphans may be listed too.
        found = {proc.pid: proc for proc in listing.processes if proc.pid in orphans}
        assert set(found) == orphans
        assert {proc.klass for proc in found.values()} == {"leftover"}
        assert {proc.user for proc in found.values()} == {"root"}
        report = await kill_processes(
            host,
            [proc for proc in leftovers(listing.processes) if proc.pid in orphans],
            context,
            read_only=False,
            timeout_s=5.0,
        )
    finally:
        await host.close()
    assert {o.outcome for o in report.outcomes} == {"refused"}, report.outcomes
    for outcome in report.outcomes:
        assert outcome.detail == "refused: owned by root (only root may signal other users)"
        assert outcome.signals == ()
    assert not report.all_ended
    time.sleep(0.5)
    assert all(is_alive(pid) for pid in orphans)
    records = list(read_audit())
    assert [r["event"] for r in records] == ["kill-request", "kill-outcome"]
    assert {r["host"] for r in records} == {config.route}
    assert {o["outcome"] for o in records[1]["outcomes"]} == {"refused"}


async def test_listings_over_ssh_share_one_long_lived_helper(
    sshd: SshdPair, orphaned_box: SimBox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten refreshes open one SSH session for the helper, not ten `python3 -`; a helper
    killed on the box is started again by the next refresh, which still answers."""
    from tui.procs.remote import helper_session

    config = sshd.host_config()
    host = SSHHost(config)
    opened: list[tuple[str, ...]] = []
    real_start = SSHHost._start

    async def counted_start(self: SSHHost, argv, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(tuple(argv))
        return await real_start(self, argv, *args, **kwargs)

    monkeypatch.setattr(SSHHost, "_start", counted_start)
    gpu = SimGpuSource(orphaned_box)
    context = context_for(_profile(config), host)
    orphans = _orphan_pids(orphaned_box)
    try:
        for _ in range(10):
            listing = await list_gpu_processes(host, await gpu.sample(), context)
            assert orphans <= {proc.pid for proc in listing.processes}
        session = helper_session(host)
        assert session is not None and session.started == 1
        assert len(opened) == 1, opened  # one session for ten listings
        assert sshd.first.process is not None
        # This test's helper: under this test's own sshd (other tests' helpers may run too).
        helpers = [
            pid
            for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
            if _cmdline(pid).split(b"\0")[0].endswith(b"python3")
            and b"servedeck-helper" in _cmdline(pid)
            and _descends_from(pid, sshd.first.process.pid)
        ]
        assert len(helpers) == 1, [_cmdline(pid)[:60] for pid in helpers]
        os.kill(helpers[0], signal.SIGKILL)
        wait_until(lambda: not is_alive(helpers[0]), 10.0)
        listing = await list_gpu_processes(host, await gpu.sample(), context)
        assert orphans <= {proc.pid for proc in listing.processes}
        assert session.started == 2 and len(opened) == 2, opened
    finally:
        await host.close()


def _descends_from(pid: int, ancestor_pid: int) -> bool:
    for _ in range(32):
        if pid == ancestor_pid:
            return True
        if pid <= 1:
            return False
        try:
            pid = _ppid(pid)
        except (OSError, IndexError, ValueError):
            return False
    return False


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
