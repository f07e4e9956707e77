"""The GPU processes pane and the kill confirmation modal (Textual run_test and a snapshot)."""

from __future__ import annotations

import io
import os
import time
from dataclasses import replace

import pytest
from rich.console import Console
from textual.widgets import Button, Input, Static

from tests.support.procs_app import ProcsTestApp
from tests.support.procs_fixtures import own_unit_shape, wait_until
from tui.gpu.model import GpuProcessUsage
from tui.hosts import LocalHost
from tui.procs import (
    ClassifyContext,
    GpuMemoryShare,
    GpuProcess,
    ProcIdentity,
    ProcListing,
    list_gpu_processes,
)
from tui.screens.kill_confirm import KillConfirmScreen
from widgets.procs_pane import ProcsPane, row_key

GIB = 1024**3
NOW_S = 1_760_000_000.0


def gpu_process(
    pid: int, klass: str, memory_gib: float, command: str, ticks: int = 100
) -> GpuProcess:
    return GpuProcess(
        identity=ProcIdentity("boot-1", pid, ticks),
        klass=klass,
        reason="test",
        ppid=1,
        state="S",
        user="vllm",
        uid=1000,
        start_time_s=NOW_S - 3723,
        command=command,
        cgroup="/system.slice/vllm.service",
        gpus=(GpuMemoryShare(pid % 8, int(memory_gib * GIB)),),
    )


def listing(*processes: GpuProcess) -> ProcListing:
    return ProcListing("gpu-box-01", "boot-1", NOW_S, processes)


SEED = listing(
    gpu_process(4101, "service", 88.5, "vllm serve /models/kimi-k25-int4 --tensor-parallel-size 8"),
    gpu_process(4177, "leftover", 84.2, "VLLM::Worker_TP1"),
    gpu_process(4178, "leftover", 84.2, "VLLM::Worker_TP2"),
    gpu_process(5230, "foreign", 3.1, "python3 notebook_kernel.py"),
)


async def test_rows_are_keyed_by_identity_and_diffed() -> None:
    app = ProcsTestApp(SEED, NOW_S)
    async with app.run_test(size=(120, 20)) as pilot:
        pane = app.query_one(ProcsPane)
        assert pane.row_count == 4
        pane.move_cursor(row=2)
        assert pane.selected() is not None and pane.selected().pid == 4178
        moved = replace(SEED.processes[2], gpus=(GpuMemoryShare(2, 10 * GIB),))
        reused = gpu_process(4101, "leftover", 1.0, "VLLM::EngineCore", ticks=999)
        pane.show_listing(listing(reused, SEED.processes[1], moved), NOW_S + 5)
        await pilot.pause()
        assert pane.row_count == 3
        keys = {row.key.value for row in pane.ordered_rows}
        assert row_key(SEED.processes[0].identity) not in keys  # old 4101 gone
        assert row_key(reused.identity) in keys  # the reused pid is a new row
        assert pane.selected().pid == 4178  # the cursor stayed on its process
        assert str(pane.get_cell(row_key(moved.identity), "memory")) == "10.0 GiB"
        leftover_cell = pane.get_cell(row_key(moved.identity), "class")
        assert "yellow" in str(leftover_cell.style)


async def test_foreign_target_needs_its_pid_typed() -> None:
    app = ProcsTestApp(SEED, NOW_S)
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, KillConfirmScreen)
        console = Console(width=140, record=True, file=io.StringIO())
        console.print(screen.query_one("#kill-targets", Static).content)
        text = console.export_text()
        for field in ("4177", "4178", "5230", "gpu-box-01", "vllm", "84.2 GiB", "Worker_TP2"):
            assert field in text
        assert "4101" not in text  # the running service's process is not a target
        kill = screen.query_one("#kill-confirm", Button)
        assert kill.disabled
        screen.query_one(Input).value = "4177"
        await pilot.pause()
        assert kill.disabled  # a leftover's pid does not confirm the foreign one
        screen.query_one(Input).value = "5230"
        await pilot.pause()
        assert not kill.disabled
        results = []
        screen.dismiss = results.append  # type: ignore[method-assign]
        await pilot.click("#kill-confirm")
        assert results and results[0].confirmed_foreign == frozenset({5230})


async def test_confirmed_kill_runs_in_a_worker_and_reports(spawn_orphan) -> None:  # type: ignore[no-untyped-def]
    worker = spawn_orphan("VLLM::Worker_TP5")
    host = LocalHost()
    context = ClassifyContext(
        subreaper_pids=(worker.subreaper_pid,), console_pid=os.getpid(), **own_unit_shape()
    )
    real = await list_gpu_processes(host, [GpuProcessUsage(worker.pid, 5, 12 * GIB)], context)
    app = ProcsTestApp(real, time.time(), host=host, context=context, reread_hints=[])
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, KillConfirmScreen)
        await pilot.click("#kill-confirm")
        for _ in range(200):
            await pilot.pause(0.1)
            if app.reports:
                break
        (report,) = app.reports
        assert report.outcomes[0].outcome == "terminated"
        assert report.freed_bytes == 12 * GIB
    assert wait_until(lambda: not worker.alive())


def test_kill_modal_snapshot(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()

    async def open_modal(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("k")
        await pilot.pause(0.2)

    try:
        assert snap_compare(
            ProcsTestApp(SEED, NOW_S), terminal_size=(120, 30), run_before=open_modal
        )
    finally:
        monkeypatch.undo()
        time.tzset()
