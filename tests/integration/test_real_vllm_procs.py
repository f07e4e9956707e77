"""The leftover killer on the real orphans of a SIGKILLed vLLM 0.32.0 API server.

A second server (not the session one: the restart guard test's restarted server
when that test ran first on this worker, else a new one) has its API server
SIGKILLed, which orphans VLLM::EngineCore, VLLM::Worker and a multiprocessing
resource_tracker: the chore servedeck exists for. The profile names the unit the
server stands for; what proves the orphans are its own is what systemd would say
of it: run by this user (User=), from the server's directory (WorkingDirectory=),
ExecStart= the vLLM venv's `vllm serve`. This machine has no GPU and runs no
systemd, so neither of servedeck's candidate sources exists (no NVML process list,
no /dev/nvidia* holders) and no systemctl answers. Stand-ins, each said where it is
used:
  - `systemctl show` is a stand-in on PATH printing that unit's properties
    (tests/support/procs_fixtures.py), parsed by the product as systemd's;
  - the library listing points `device_prefix` (the path a GPU holder has open)
    at the server's captured log, which every vLLM process holds as stdout, so
    the real holder scan finds the candidates with no hints at all;
  - the CLI's GPU source is replaced by one reporting the orphaned EngineCore
    and Worker pids (found in /proc by the harness's env marker) as NVML would,
    with made-up memory figures; it drops a pid once the process is gone.
Classification, identity checks, signalling and the audit log are all real.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.procs_fixtures import (
    install_systemctl,
    unit_show_text,
    unit_user_field,
    wait_until,
)
from tests.support.vllm_harness import VllmServer, VllmServerFactory
from tests.support.vllm_procs import ProcInfo, processes_with_marker, still_running
from tui.cli import main
from tui.compose import open_deck
from tui.core.audit import read_audit
from tui.core.config import Profile, ServiceConfig
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample
from tui.ops.gpu_hints import deck_context
from tui.procs import leftovers, list_gpu_processes
from tui.procs.model import GpuProcess

pytestmark = pytest.mark.real_vllm

GIB = 1024**3
RESOURCE_TRACKER = "*-c from multiprocessing.resource_tracker import main*"
UNIT = "crashed-vllm.service"


def server_unit_show(
    server: VllmServer, *, working_directory: str | None = None, venv: bool = True
) -> str:
    """`systemctl show` of the stopped unit this server stands for, as systemd prints it:
    User= the user running it, WorkingDirectory= its cwd (None: the server's), ExecStart=
    the vLLM venv's `vllm serve` (the harness starts it so, from that directory)."""
    where = str(server.workdir) if working_directory is None else working_directory
    vllm = str(server.python.parent / "vllm")
    argv = (vllm, "serve", server.model, "--port", str(server.port)) if venv else ()
    return unit_show_text(UNIT, "inactive", unit_user_field(), where, argv)


def orphan_server(factory: VllmServerFactory) -> tuple[VllmServer, list[ProcInfo]]:
    """Start a server, SIGKILL its API server, return it and its orphans once reparented.

    This is also the proof of what vLLM 0.32.0 leaves after a SIGKILL of the API
    server: one EngineCore, one Worker and the resource_tracker, reparented (PID 1
    or a subreaper) and still running; the callers then find and end them.
    """
    server = factory()
    tree = server.tree_at_start
    assert [p for p in tree if p.cmdline.startswith("VLLM::EngineCore")], tree
    assert [p for p in tree if "resource_tracker" in p.cmdline], tree
    os.kill(server.pid, signal.SIGKILL)
    server.process.wait(timeout=30)
    assert server.process.returncode == -signal.SIGKILL

    def reparented() -> bool:
        procs = processes_with_marker(server.run_id)
        return bool(procs) and all(p.ppid != server.pid for p in procs)

    assert wait_until(reparented, timeout_s=30.0), processes_with_marker(server.run_id)
    orphans = processes_with_marker(server.run_id)
    for title in ("VLLM::EngineCore", "VLLM::Worker"):
        assert len([p for p in orphans if p.cmdline.startswith(title)]) == 1, orphans
    assert [p for p in orphans if "resource_tracker" in p.cmdline], orphans
    return server, orphans


def titled(procs: list[ProcInfo], title: str) -> ProcInfo:
    (found,) = [p for p in procs if p.cmdline.startswith(title)]
    return found


def tracker_of(procs: list[ProcInfo]) -> ProcInfo:
    (found,) = [p for p in procs if "multiprocessing.resource_tracker" in p.cmdline]
    return found


class OrphanHints:
    """Stand-in for NVML (no GPU here): the orphaned GPU workers' pids while they live."""

    name = "test-hints"

    def __init__(self, usages: list[tuple[ProcInfo, int]]) -> None:
        self.usages = usages

    async def sample(self) -> GpuBoxSnapshot:
        alive = tuple(
            GpuProcessUsage(info.pid, 0, memory)
            for info, memory in self.usages
            if still_running(info)
        )
        used = sum(usage.used_memory_bytes or 0 for usage in alive)
        sample = GpuSample(0, used, 96 * GIB, processes=alive)
        return GpuBoxSnapshot("test-hints", time.time(), samples=(sample,), simulated=True)

    async def aclose(self) -> None:
        return None


def write_profile(folder: Path, server: VllmServer) -> Path:
    """A local profile for the crashed server; its patterns name the service's own python."""
    path = folder / "crashed-vllm.toml"
    patterns = ["VLLM::*", f"{server.python} {RESOURCE_TRACKER}"]
    path.write_text(
        "[service]\n"
        'engine = "vllm"\n'
        f'unit = "{UNIT}"\n'
        f'base_url = "{server.base_url}"\n'
        f'log_file = "{server.log_path}"\n'
        f"process_patterns = {json.dumps(patterns)}\n"
    )
    return path


async def own_listing(profile: Profile, server: VllmServer, own: set[int]) -> dict[int, GpuProcess]:
    """The real holder scan with no hints, in the context the product's Deck builds for the
    profile (the unit's User=, WorkingDirectory= and ExecStart= from systemctl)."""
    deck = open_deck(profile)
    try:
        # Stand-in for /dev/nvidia*: the log file every vLLM process holds open as stdout.
        context = replace(await deck_context(deck), device_prefix=str(server.log_path))
        listing = await list_gpu_processes(deck.host, None, context)
    finally:
        await deck.close()
    # Other servers' orphans may share this machine: look at this server's own.
    return {proc.pid: proc for proc in listing.processes if proc.pid in own}


def library_listing(
    server: VllmServer, orphans: list[ProcInfo], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every orphan found; the service's ones leftovers by the unit's proofs, suspects without."""
    core, worker = titled(orphans, "VLLM::EngineCore"), titled(orphans, "VLLM::Worker")
    tracker = tracker_of(orphans)
    own = {core.pid, worker.pid, tracker.pid}
    profile = Profile(
        name="crashed-vllm",
        service=ServiceConfig(
            unit=UNIT,
            base_url=server.base_url,
            process_patterns=("VLLM::*", f"{server.python} {RESOURCE_TRACKER}"),
        ),
    )
    install_systemctl(monkeypatch, folder / "unit-full", server_unit_show(server))
    by_pid = asyncio.run(own_listing(profile, server, own))
    assert set(by_pid) == own, by_pid
    for info in (core, worker, tracker):
        found = by_pid[info.pid]
        assert found.klass == "leftover", found
        assert f"from the unit's directory {server.workdir}" in found.reason, found
        assert found.pid_source == "device" and found.ppid == info.ppid
        assert found.identity.start_ticks == info.start_ticks
    # A unit with no WorkingDirectory= (most of them): its ExecStart's venv proves the same.
    install_systemctl(
        monkeypatch, folder / "unit-venv", server_unit_show(server, working_directory="")
    )
    by_pid = asyncio.run(own_listing(profile, server, own))
    venv_root = server.python.parent.parent
    for pid in own:
        assert by_pid[pid].klass == "leftover", by_pid[pid]
        assert f"from the unit's environment {venv_root}" in by_pid[pid].reason
    # A unit naming neither proves nothing: the same orphans are suspects, never offered.
    bare = server_unit_show(server, working_directory="", venv=False)
    install_systemctl(monkeypatch, folder / "unit-bare", bare)
    by_pid = asyncio.run(own_listing(profile, server, own))
    assert {proc.klass for proc in by_pid.values()} == {"suspect"}, by_pid
    assert not leftovers(list(by_pid.values()))
    # The default patterns know vLLM's workers but not a generic resource_tracker.
    install_systemctl(monkeypatch, folder / "unit-plain", server_unit_show(server))
    plain = Profile(name="plain", service=ServiceConfig(unit=UNIT))
    classes = {
        pid: proc.klass for pid, proc in asyncio.run(own_listing(plain, server, own)).items()
    }
    assert classes == {core.pid: "leftover", worker.pid: "leftover", tracker.pid: "foreign"}


def test_orphans_of_a_killed_api_server_are_listed_killed_and_audited(
    vllm_server_factory: VllmServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, orphans = orphan_server(vllm_server_factory)
    core, worker = titled(orphans, "VLLM::EngineCore"), titled(orphans, "VLLM::Worker")
    tracker = tracker_of(orphans)
    assert all(p.ppid != server.pid for p in (core, worker, tracker)), orphans
    library_listing(server, orphans, tmp_path, monkeypatch)

    hints = OrphanHints([(core, 2 * GIB), (worker, 30 * GIB)])

    async def hint_source(deck: object) -> OrphanHints:
        return hints

    monkeypatch.setattr("tui.deck.Deck.gpu_source", hint_source)
    # Other tests share this machine and leave orphans of their own matching "VLLM::*" (a
    # second server's, the fleet tests' stand-ins): the box is this server's processes.
    scope = tuple(p.pid for p in orphans)
    monkeypatch.setattr("tui.deck.Deck.process_scope", lambda deck: scope)
    profile = str(write_profile(tmp_path, server))
    install_systemctl(monkeypatch, tmp_path / "unit", server_unit_show(server))

    assert main(["--profile", profile, "procs", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    by_pid = {proc["identity"]["pid"]: proc for proc in listing["processes"]}
    # The resource_tracker holds no GPU but is an orphan matching the service's patterns.
    assert {core.pid, worker.pid, tracker.pid} <= set(by_pid), listing
    by_pid = {pid: by_pid[pid] for pid in (core.pid, worker.pid, tracker.pid)}
    assert {proc["klass"] for proc in by_pid.values()} == {"leftover"}, by_pid
    assert all("from the unit's directory" in proc["reason"] for proc in by_pid.values())
    assert by_pid[tracker.pid]["gpu_memory_bytes"] is None
    assert "no GPU memory" in by_pid[tracker.pid]["reason"]
    assert by_pid[worker.pid]["gpu_memory_bytes"] == 30 * GIB
    assert by_pid[core.pid]["command"].startswith("VLLM::EngineCore")

    assert main(["--profile", profile, "kill", "--leftovers", "--yes", "--timeout", "60"]) == 0
    out = capsys.readouterr().out
    assert f"pid {core.pid}: terminated [SIGTERM]" in out, out
    assert f"pid {worker.pid}: " in out
    assert "32.00 GiB GPU memory freed" in out, out
    # Once its clients are gone the resource_tracker ends by itself; then nothing is left.
    assert wait_until(lambda: not still_running(tracker), timeout_s=60.0)
    assert wait_until(lambda: not server.leftovers(), timeout_s=30.0), server.leftovers()

    records = list(read_audit())
    assert [record["event"] for record in records] == ["kill-request", "kill-outcome"]
    request, outcome = records
    assert request["action"] == outcome["action"] == "kill --leftovers"
    assert {core.pid, worker.pid, tracker.pid} <= {t["pid"] for t in request["targets"]}
    assert {t["class"] for t in request["targets"]} == {"leftover"}
    results = {r["pid"]: r["outcome"] for r in outcome["outcomes"]}
    results = {pid: results[pid] for pid in (core.pid, worker.pid, tracker.pid)}
    assert set(results.values()) <= {"terminated", "gone"}
    assert outcome["freed_bytes"] == 32 * GIB
