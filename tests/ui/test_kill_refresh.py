"""After a cleanup the Processes pane shows what the kill's own final re-check saw (item 6).

Real orphaned workers, adopted by the test process (a subreaper, as a console can be),
so once killed they stay <defunct> until the test reaps them: a listing built from a
GPU sample older than the kill would show them as defunct, still holding memory.
No GPU here: the deck's GPU source is the hint source of procs_fixtures, and the GPU
poll is slowed to its slowest (10 s) so the console's last sample is older than the kill.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from tests.support import procs_fixtures
from tests.support.procs_fixtures import (
    GPU_HINTS,
    install_systemctl,
    unit_show_text,
    unit_user_field,
)
from tui.app import ServedeckApp
from tui.core.config import GpuConfig, Profile
from tui.deck import Deck
from tui.gpu.model import GpuProcessUsage
from tui.hosts.local import LocalHost
from tui.screens.kill_confirm import KillConfirmScreen
from widgets.procs_pane import ProcsPane

GIB = 1024**3


@pytest.fixture(autouse=True)
def hint_gpu_source(monkeypatch: pytest.MonkeyPatch) -> None:
    async def hint_source(deck: object) -> procs_fixtures.HintGpuSource:
        return procs_fixtures.HintGpuSource()

    monkeypatch.setattr("tui.deck.Deck.gpu_source", hint_source)


async def until(pilot, predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


async def test_killed_workers_never_show_as_defunct_after_the_report(  # type: ignore[no-untyped-def]
    spawn_orphan, tmp_path, monkeypatch
) -> None:
    workers = [spawn_orphan(f"VLLM::Worker_TP{i}", adopted_by_test=True) for i in range(2)]
    GPU_HINTS.extend(GpuProcessUsage(w.pid, i, 40 * GIB) for i, w in enumerate(workers))
    # The stopped unit runs as this test's user from its directory (systemctl is a stand-in
    # here): the proof that the workers are its leftovers.
    unit = "servedeck-test-vllm.service"
    install_systemctl(
        monkeypatch, tmp_path, unit_show_text(unit, "inactive", unit_user_field(), os.getcwd())
    )
    local = Profile(name="local")
    profile = replace(
        local, gpu=GpuConfig(refresh_s=10.0), service=replace(local.service, unit=unit)
    )
    app = ServedeckApp(profile, Deck(profile, LocalHost()))
    pids = {worker.pid for worker in workers}
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.last_gpu is not None, 20, "a GPU sample")
        await pilot.press("3")
        pane = app.query_one(ProcsPane)

        def listed() -> set[int]:
            return {proc.pid for proc in pane._processes.values()}

        # Its two workers listed (a full run's other orphans matching the patterns may be too).
        await until(pilot, lambda: pids <= listed(), 20, "the two leftovers")
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, KillConfirmScreen), 20, "the dialog")
        await pilot.press("shift+tab", "enter")
        await until(
            pilot,
            lambda: any("terminated" in note.message for note in app._notifications),
            30,
            "the kill report",
        )
        assert all(procs_fixtures.proc_state(pid) == "Z" for pid in pids)  # unreaped: defunct
        # From the report on, the pane never lists the killed workers (defunct or not).
        for _ in range(80):  # 4 s: past the next Processes poll (3 s)
            shown = {proc.pid: proc.klass for proc in pane._processes.values()}
            assert not pids & set(shown), f"killed workers still listed: {shown}"
            await pilot.pause(0.05)
