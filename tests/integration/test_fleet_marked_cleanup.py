"""Clean up leftovers on several marked hosts at once, over real sshd servers.

Two failed boxes behind their own real OpenSSH servers (the fleet fixture), each
listing one real orphaned "VLLM::Worker" process (reparented to PID 1) in its
nvidia-smi. Space marks hosts; K plans every marked host on its own: one kill dialog
per host, that host's own leftover confirmed in it, the host re-checked (uname -n, boot id)
before acting, each kill audited. A read-only fleet refuses each host, audited, with
no dialog.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fleet_fixtures import SshdFleet, fleet_collector, running_fleet
from tests.support.procs_fixtures import proc_state, spawn_pid1_orphan, wait_until
from tests.support.sshd_fixtures import SshdPair, sshd_pair  # noqa: F401  (fixture)
from tests.support.waiting import pilot_wait
from tui.app.fleet_app import FleetApp
from tui.core.audit import read_audit
from tui.fleet.deck_probe import DeckProbe
from tui.screens.kill_confirm import KillConfirmation, KillConfirmScreen

pytestmark = pytest.mark.sshd


@pytest.fixture
def leftovers(two_failed: SshdFleet) -> Iterator[list[int]]:
    """One real orphan per box, listed by that box's nvidia-smi; killed at teardown if left."""
    spawned = [spawn_pid1_orphan() for _ in two_failed.hosts]
    saved = []
    for host, (pid, _fd) in zip(two_failed.hosts, spawned, strict=True):
        apps = host.box_dir / "handmade_8x_h200_compute_apps.csv"
        text = apps.read_text()
        saved.append((apps, text))
        apps.write_text(f"{text.split(',')[0]}, {pid}, 20480, VLLM::Worker_TP0\n")
    try:
        yield [pid for pid, _fd in spawned]
    finally:
        for apps, text in saved:
            apps.write_text(text)
        for _pid, fd in spawned:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            os.close(fd)


@pytest.fixture(scope="module")
def two_failed(
    sshd_pair: SshdPair,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SshdFleet]:
    with running_fleet(
        sshd_pair, "http://127.0.0.1:9", tmp_path_factory.mktemp("fleet"), ("failed", "failed")
    ) as fleet:
        yield fleet


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the group's members are found in ./profiles


async def _mark_all(app: FleetApp, pilot: object, fleet: SshdFleet) -> None:
    """Filter to each host in turn (the cursor lands on it) and mark it with space."""
    await pilot_wait(pilot, lambda: app.refreshes >= 1 and app.rows, "a first refresh")
    for host in fleet.hosts:
        await pilot.press("slash", *host.name, "enter")  # type: ignore[attr-defined]
        await pilot_wait(
            pilot, lambda h=host.name: app.query_one("FleetTable").selected_host() == h, host.name
        )
        await pilot.press("space")  # type: ignore[attr-defined]
        await pilot.press("escape")  # type: ignore[attr-defined]
    assert app.marked == [host.name for host in fleet.hosts]


async def test_k_cleans_up_each_marked_host_with_its_own_dialog(
    two_failed: SshdFleet, tmp_path: Path, leftovers: list[int]
) -> None:
    collector = fleet_collector(two_failed, tmp_path)
    labels: dict[int, str] = {}
    host_labels = []
    for host in two_failed.hosts:
        probe = collector.probe(host.name)
        assert isinstance(probe, DeckProbe)
        host_labels.append(probe.deck.host_label)
    app = FleetApp(collector, interval_s=0.5)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await _mark_all(app, pilot, two_failed)
            assert "marked 2" in str(app.query_one("#status").render())
            await pilot.press("K")
            for _ in two_failed.hosts:
                await pilot_wait(
                    pilot, lambda: isinstance(app.screen, KillConfirmScreen), "a dialog"
                )
                dialog = app.screen
                assert isinstance(dialog, KillConfirmScreen)
                index = host_labels.index(dialog.host_label)
                labels[index] = dialog.host_label
                # All the boxes are this one machine, so each lists both orphans (and any
                # other test's): confirm only this host's own orphan, as the Kill button
                # would with a narrowed list.
                # (The other box's orphan is listed too unless its own kill came first.)
                assert leftovers[index] in {proc.pid for proc in dialog.targets}
                mine = tuple(proc for proc in dialog.targets if proc.pid == leftovers[index])
                dialog.dismiss(KillConfirmation(mine, frozenset()))
                await pilot_wait(pilot, lambda d=dialog: app.screen is not d, "the dialog closed")
            assert sorted(labels) == [0, 1]
            assert app.marked == []  # K used the marks up: a second K acts on the cursor only
            await pilot_wait(
                pilot,
                lambda: all(proc_state(pid) in (None, "Z") for pid in leftovers),
                "both leftovers ended",
            )
    finally:
        await collector.close()
    records = list(read_audit())
    killed_on = {r["host"] for r in records if r["event"].startswith("kill")}
    assert killed_on == set(labels.values()), records
    assert not [r for r in records if r["event"] == "fleet.refused"], records


async def test_read_only_fleet_refuses_every_marked_host_audited(
    two_failed: SshdFleet, tmp_path: Path, leftovers: list[int]
) -> None:
    collector = fleet_collector(two_failed, tmp_path, read_only=True)
    app = FleetApp(collector, interval_s=0.5)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await _mark_all(app, pilot, two_failed)
            await pilot.press("K")
            await pilot_wait(pilot, lambda: len(list(read_audit())) >= 2, "two refusals")
            await pilot.pause(0.5)
            assert not isinstance(app.screen, KillConfirmScreen)
            notes = [note.message for note in app._notifications]
            assert sum("read-only" in note for note in notes) == 2, notes
    finally:
        await collector.close()
    records = list(read_audit())
    assert [r["event"] for r in records] == ["fleet.refused", "fleet.refused"], records
    assert all(r["reason"] == "read-only" for r in records)
    assert len({r["host"] for r in records}) == 2
    assert wait_until(lambda: all(proc_state(pid) not in (None, "Z") for pid in leftovers), 1)
