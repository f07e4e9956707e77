"""The process killer against real processes on this machine, through the real helper.

The GPU source is only a hint provider, so each test builds the GpuProcessUsage
list naming its own processes' pids, and a re-read callback that no longer names
the ones that were killed.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.procs_fixtures import own_unit_shape, proc_state, wait_until
from tui.core.audit import read_audit
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample
from tui.hosts import LocalHost
from tui.procs import (
    ClassifyContext,
    GpuProcess,
    ReadOnlyError,
    kill_processes,
    leftovers,
    list_gpu_processes,
)

GIB = 1024**3
SECRET = "sk-abcdefghijklmnop1234567890"


def context(*subreapers: int, **changes: object) -> ClassifyContext:
    """The test's orphans run as the unit's user from its directory: proven the service's."""
    base = ClassifyContext(subreaper_pids=subreapers, console_pid=os.getpid(), **own_unit_shape())
    return replace(base, **changes)  # type: ignore[arg-type]


def snapshot(usages: list[GpuProcessUsage]) -> GpuBoxSnapshot:
    """A GPU snapshot whose per-GPU used memory is the sum of its processes."""
    samples = []
    for index in sorted({usage.gpu_index for usage in usages} | {0}):
        mine = tuple(usage for usage in usages if usage.gpu_index == index)
        used = sum(usage.used_memory_bytes or 0 for usage in mine)
        samples.append(GpuSample(index, used, 96 * GIB, processes=mine))
    return GpuBoxSnapshot("simulated", 0.0, samples=tuple(samples), simulated=True)


def rereader(usages: list[GpuProcessUsage]):  # type: ignore[no-untyped-def]
    """Re-read: only the processes still alive keep their memory."""

    async def reread() -> GpuBoxSnapshot:
        return snapshot([u for u in usages if proc_state(u.pid) not in (None, "Z")])

    return reread


async def test_orphaned_worker_is_a_leftover_and_sigterm_frees_its_memory(spawn_orphan) -> None:  # type: ignore[no-untyped-def]
    worker = spawn_orphan(f"VLLM::Worker_TP0 --api-key {SECRET}")
    usages = [GpuProcessUsage(worker.pid, 0, 40 * GIB), GpuProcessUsage(worker.pid, 1, 2 * GIB)]
    host = LocalHost()
    listing = await list_gpu_processes(host, snapshot(usages), context(worker.subreaper_pid))
    (proc,) = [p for p in listing.processes if p.pid == worker.pid]
    assert proc.klass == "leftover", proc.reason
    assert proc.ppid == worker.subreaper_pid
    assert proc.gpu_memory_bytes == 42 * GIB and proc.gpu_indices == (0, 1)
    assert SECRET not in proc.command and proc.command.startswith("VLLM::Worker_TP0")
    assert proc.identity.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert abs(proc.start_time_s - os.stat(f"/proc/{worker.pid}").st_mtime) < 3600

    report = await kill_processes(
        host,
        leftovers(listing.processes),
        context(worker.subreaper_pid),
        read_only=False,
        reread=rereader(usages),
    )
    (outcome,) = report.outcomes
    assert outcome.outcome == "terminated", outcome.detail
    assert outcome.signals == ("SIGTERM",) and outcome.method == "pidfd"
    assert outcome.freed_bytes == 42 * GIB and report.freed_bytes == 42 * GIB
    assert not worker.alive()

    records = list(read_audit())
    assert [r["event"] for r in records] == ["kill-request", "kill-outcome"]
    assert records[0]["targets"][0]["pid"] == worker.pid
    assert records[0]["targets"][0]["start_ticks"] == proc.identity.start_ticks
    assert records[1]["outcomes"][0]["outcome"] == "terminated"
    assert records[1]["freed_bytes"] == 42 * GIB
    audit_text = Path(os.environ["SERVEDECK_LOG_DIR"], "audit.jsonl").read_text()
    assert SECRET not in audit_text and "[REDACTED]" in audit_text


async def test_worker_ignoring_sigterm_gets_sigkill_after_the_timeout(spawn_orphan) -> None:  # type: ignore[no-untyped-def]
    worker = spawn_orphan("VLLM::Worker_TP1", ignore_term=True)
    usages = [GpuProcessUsage(worker.pid, 1, 8 * GIB)]
    host = LocalHost()
    listing = await list_gpu_processes(host, usages, context(worker.subreaper_pid))
    report = await kill_processes(
        host,
        leftovers(listing.processes),
        context(worker.subreaper_pid),
        read_only=False,
        timeout_s=1.0,
        reread=rereader(usages),
    )
    (outcome,) = report.outcomes
    assert outcome.outcome == "killed", outcome.detail
    assert outcome.signals == ("SIGTERM", "SIGKILL")
    assert outcome.freed_bytes == 8 * GIB
    assert wait_until(lambda: not worker.alive())


async def test_defunct_child_is_reported_with_its_parent_and_not_signalled(spawn_zombie) -> None:  # type: ignore[no-untyped-def]
    zombie, parent = spawn_zombie()
    host = LocalHost()
    listing = await list_gpu_processes(host, [GpuProcessUsage(zombie, 0, GIB)], context())
    (proc,) = [p for p in listing.processes if p.pid == zombie]
    assert proc.klass == "defunct" and proc.ppid == parent
    assert str(parent) in proc.reason and proc.parent_command
    report = await kill_processes(host, [proc], context(), read_only=False)
    assert report.outcomes[0].outcome == "refused"
    assert f"parent {parent} must reap" in report.outcomes[0].detail
    assert proc_state(parent) == "S"


async def test_a_replaced_process_is_not_signalled(spawn_orphan) -> None:  # type: ignore[no-untyped-def]
    """The pid now belongs to a process with another start time: nothing is sent."""
    worker = spawn_orphan("VLLM::Worker_TP2")
    host = LocalHost()
    listing = await list_gpu_processes(
        host, [GpuProcessUsage(worker.pid, 0, GIB)], context(worker.subreaper_pid)
    )
    (proc,) = listing.processes
    stale = replace(
        proc, identity=replace(proc.identity, start_ticks=proc.identity.start_ticks - 1)
    )
    report = await kill_processes(host, [stale], context(), read_only=False, timeout_s=1.0)
    assert report.outcomes[0].outcome == "gone"
    assert report.outcomes[0].signals == ()
    assert worker.alive()
    other_boot = replace(proc, identity=replace(proc.identity, boot_id="another-boot"))
    report = await kill_processes(host, [other_boot], context(), read_only=False)
    assert report.outcomes[0].outcome == "gone" and worker.alive()


async def test_refusals_pid1_own_tree_foreign_and_read_only(spawn_orphan) -> None:  # type: ignore[no-untyped-def]
    host = LocalHost()
    worker = spawn_orphan("not-a-vllm-worker")  # an orphan not matching the patterns
    mine = os.getpid()
    listing = await list_gpu_processes(
        host,
        [
            GpuProcessUsage(1, 0, GIB),
            GpuProcessUsage(mine, 0, GIB),
            GpuProcessUsage(worker.pid, 0, GIB),
        ],
        context(worker.subreaper_pid),
    )
    by_pid = {p.pid: p for p in listing.processes}
    assert by_pid[worker.pid].klass == "foreign"
    # Pretend the listing called PID 1 and ourselves leftovers: the helper still refuses.
    forged = [replace(by_pid[1], klass="leftover"), replace(by_pid[mine], klass="leftover")]
    report = await kill_processes(host, [*forged, by_pid[worker.pid]], context(), read_only=False)
    details = {o.identity.pid: o.detail for o in report.outcomes}
    assert all(o.outcome == "refused" for o in report.outcomes), details
    assert "PID 1" in details[1]
    assert "own process tree" in details[mine]
    assert "typed confirmation" in details[worker.pid]
    assert worker.alive()

    with pytest.raises(ReadOnlyError):
        await kill_processes(host, [by_pid[worker.pid]], context(), read_only=True)
    assert worker.alive()
    assert [r["event"] for r in read_audit()][-1] == "kill-refused"

    report = await kill_processes(
        host, [by_pid[worker.pid]], context(), read_only=False, confirmed_foreign={worker.pid}
    )
    assert report.outcomes[0].outcome == "terminated", report.outcomes[0].detail
    assert not worker.alive()


async def test_device_holders_missing_from_nvml_are_found(spawn_orphan, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    device = tmp_path / "nvidia0"
    device.write_bytes(b"")
    worker = spawn_orphan("VLLM::EngineCore", hold_path=str(device))
    listing = await list_gpu_processes(
        LocalHost(),
        [],
        context(worker.subreaper_pid, device_prefix=str(tmp_path / "nvidia")),
    )
    (proc,) = listing.processes
    assert proc.pid == worker.pid and proc.pid_source == "device"
    assert proc.klass == "leftover" and proc.gpu_memory_bytes is None


async def test_nvml_pid_not_holding_the_device_is_foreign(spawn_orphan, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """With device holders known, a hint pid that holds none is probably another namespace's."""
    device = tmp_path / "nvidia0"
    device.write_bytes(b"")
    holder = spawn_orphan("VLLM::Worker_TP0", hold_path=str(device))
    bystander = spawn_orphan("VLLM::Worker_TP1")
    listing = await list_gpu_processes(
        LocalHost(),
        [GpuProcessUsage(bystander.pid, 0, GIB)],
        context(holder.subreaper_pid, bystander.subreaper_pid, device_prefix=str(tmp_path / "nv")),
    )
    by_pid = {p.pid: p for p in listing.processes}
    assert by_pid[bystander.pid].pid_source == "unverified"
    assert by_pid[bystander.pid].klass == "foreign"
    assert by_pid[holder.pid].klass == "leftover"


def test_listing_types_are_frozen() -> None:
    proc = GpuProcess.__dataclass_params__  # type: ignore[attr-defined]
    assert proc.frozen
