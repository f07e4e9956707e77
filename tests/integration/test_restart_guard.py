"""The restart guard and the wider leftovers, against real processes on this machine.

A real process listens on the profile's port; real orphans (procs_fixtures) carry
vLLM's titles. No GPU exists here, so GPU memory comes from GpuProcessUsage hints
naming the test's own processes, as in test_procs_real.py. systemd does not run
here: `systemctl show` fails, so the unit's state is unknown, which is the case the
guard must still handle (it takes the service as meant to be down).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.procs_fixtures import own_unit_shape, service_profile, wait_until
from tests.support.worker_scope import worker_scope_pids
from tui.cli import main
from tui.core.audit import read_audit
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample
from tui.hosts import LocalHost
from tui.procs import ClassifyContext, leftovers, list_gpu_processes
from tui.procs.model import ProcListing
from tui.serving.unit.restart_guard import GIB, assess, inactive_note

# The holder binds a port the kernel picks and says which: a port chosen beforehand could be
# taken meanwhile by another test's server on this machine.
LISTENER = r"""
import socket, time
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen()
print(sock.getsockname()[1], flush=True)
while True:
    time.sleep(3600)
"""


@pytest.fixture
def port_holder() -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """A process that is not the service, listening on a free port."""
    process = subprocess.Popen(
        [sys.executable, "-c", LISTENER],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield port, process
    process.kill()
    process.wait(timeout=30)


def snapshot(usages: list[GpuProcessUsage]) -> GpuBoxSnapshot:
    used = sum(u.used_memory_bytes or 0 for u in usages)
    sample = GpuSample(0, used, 96 * GIB, processes=tuple(usages))
    return GpuBoxSnapshot("simulated", 0.0, samples=(sample,), simulated=True)


def context(*subreapers: int, **changes: object) -> ClassifyContext:
    """A wide listing of this test's processes (other xdist workers' orphans match too)."""
    base = ClassifyContext(
        subreaper_pids=subreapers,
        console_pid=os.getpid(),
        wide=True,
        scope_pids=worker_scope_pids(),
        **own_unit_shape(),  # the unit runs as this test's user from its directory
    )
    return replace(base, **changes)  # type: ignore[arg-type]


async def test_an_orphan_without_gpu_memory_is_a_leftover_with_its_reason(spawn_orphan) -> None:  # type: ignore[no-untyped-def]
    engine = spawn_orphan("VLLM::EngineCore")
    bystander = spawn_orphan("not-the-service")
    listing = await list_gpu_processes(LocalHost(), None, context(engine.subreaper_pid))
    found = listing.find(engine.pid)
    assert found is not None and found.klass == "leftover", listing.processes
    assert found.pid_source == "pattern" and found.gpu_memory_bytes is None
    assert "orphan" in found.reason and "no GPU memory" in found.reason
    assert listing.find(bystander.pid) is None  # not the service's: not a leftover
    narrow = await list_gpu_processes(LocalHost(), None, context(engine.subreaper_pid, wide=False))
    assert narrow.find(engine.pid) is None  # the old, GPU-only listing


async def test_a_scoped_box_lists_only_its_own_pattern_orphans(spawn_orphan) -> None:  # type: ignore[no-untyped-def]
    """Simulated boxes share one machine: each lists only the orphans of what it started."""
    mine = spawn_orphan("VLLM::EngineCore")
    other = spawn_orphan("VLLM::EngineCore")
    reapers = (mine.subreaper_pid, other.subreaper_pid)
    scoped = await list_gpu_processes(LocalHost(), None, context(*reapers, scope_pids=(mine.pid,)))
    found = scoped.find(mine.pid)
    assert found is not None and found.klass == "leftover", scoped.processes
    assert scoped.find(other.pid) is None
    whole = await list_gpu_processes(LocalHost(), None, context(*reapers))
    assert {mine.pid, other.pid} <= {p.pid for p in whole.processes}


async def test_a_port_holder_is_named_while_the_service_is_down_never_a_leftover(
    port_holder,
) -> None:  # type: ignore[no-untyped-def]
    port, process = port_holder
    running = await list_gpu_processes(LocalHost(), None, context(port=port, unit_active=None))
    assert running.find(process.pid) is None  # state unknown, nobody said it is down
    down = await list_gpu_processes(
        LocalHost(), None, context(port=port, unit="vllm-x.service", unit_active=False)
    )
    found = down.find(process.pid)
    assert found is not None and found.klass == "foreign"  # a port proves nothing
    assert found.pid_source == "port"
    assert found.reason.startswith(f"holds port {port} while vllm-x.service is not running")
    assert found not in leftovers(down.processes)
    verdict = assess(down, "restart", service="vllm-x.service", port=port)
    assert verdict.blocked and verdict.pids == (process.pid,)  # still in the way of a start
    assert f"pid {process.pid} (no GPU memory, port {port}, foreign)" in verdict.message()
    assert "not proven vllm-x.service's" in verdict.message()


async def test_gpu_memory_above_the_threshold_blocks_start_and_restart_not_stop(
    spawn_orphan,
) -> None:  # type: ignore[no-untyped-def]
    worker = spawn_orphan("VLLM::Worker_TP0")
    small = spawn_orphan("VLLM::Worker_TP1")
    usages = [GpuProcessUsage(worker.pid, 0, 30 * GIB), GpuProcessUsage(small.pid, 0, GIB // 2)]
    listing = await list_gpu_processes(
        LocalHost(), snapshot(usages), context(worker.subreaper_pid, small.subreaper_pid)
    )
    mine = tuple(p for p in listing.processes if p.pid in (worker.pid, small.pid))
    listing = replace(listing, processes=mine, unit_active=False)
    for verb in ("start", "restart"):
        verdict = assess(listing, verb, service="vllm-x.service", port=None)
        assert verdict.blocked
        assert verdict.held_bytes == 30 * GIB + GIB // 2
        text = verdict.message()
        assert f"pid {worker.pid} (30.0 GiB)" in text and f"pid {small.pid} (0.5 GiB)" in text
        assert "K in the console" in text and "30.5 GiB GPU memory" in text
    assert not assess(listing, "stop", service="u", port=None).blocked
    high = assess(listing, "restart", service="u", port=None, threshold_bytes=64 * GIB)
    assert not high.blocked
    note = inactive_note(listing)
    assert note is not None and note.startswith("service inactive but 30.5 GiB held by leftovers")
    assert inactive_note(replace(listing, unit_active=True)) is None


def test_inactive_note_is_silent_without_leftovers() -> None:
    assert inactive_note(ProcListing("h", "b", 0.0, unit_active=False)) is None


def test_cli_restart_is_refused_naming_the_port_holder_and_audited(  # type: ignore[no-untyped-def]
    port_holder, tmp_path: Path, capsys
) -> None:
    port, process = port_holder
    profile = tmp_path / "guarded.toml"
    profile.write_text(
        '[service]\nengine = "vllm"\nunit = "servedeck-guard-test.service"\n'
        f'base_url = "http://127.0.0.1:{port}"\n'
    )
    assert main(["--profile", str(profile), "service", "restart", "--yes"]) == 4
    err = capsys.readouterr().err
    assert "restart servedeck-guard-test.service refused" in err
    assert f"pid {process.pid} (no GPU memory, port {port}, foreign)" in err
    assert "servedeck kill --leftovers" in err
    (record,) = [r for r in read_audit() if r["event"] == "service.refused"]
    assert record["pids"] == [process.pid] and record["port"] == port
    assert wait_until(lambda: process.poll() is None, timeout_s=1.0)  # untouched


def test_cli_service_needs_yes_off_a_terminal(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    profile = tmp_path / "p.toml"
    profile.write_text('[service]\nunit = "servedeck-guard-test.service"\n')
    assert main(["--profile", str(profile), "service", "start"]) == 2
    assert "--yes" in capsys.readouterr().err


def test_procs_json_lists_an_orphan_without_gpu_memory_with_its_reason(  # type: ignore[no-untyped-def]
    spawn_orphan, capsys, monkeypatch, tmp_path
) -> None:
    from tests.support import procs_fixtures

    async def hint_source(deck: object) -> procs_fixtures.HintGpuSource:
        return procs_fixtures.HintGpuSource()  # no GPU here: no process holds memory

    monkeypatch.setattr("tui.deck.Deck.gpu_source", hint_source)
    engine = spawn_orphan("VLLM::EngineCore", adopted_by_test=True)
    profile = service_profile(tmp_path, monkeypatch)
    assert main(["--profile", str(profile), "procs", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    (found,) = [p for p in listing["processes"] if p["identity"]["pid"] == engine.pid]
    assert found["klass"] == "leftover" and found["gpu_memory_bytes"] is None
    assert found["reason"].startswith("orphan (parent ") and "no GPU memory" in found["reason"]
