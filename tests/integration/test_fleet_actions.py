"""Fleet actions over real sshd servers: stop/restart a host's unit and clean up its leftovers.

Two light simulated boxes behind their own real OpenSSH servers (the fleet fixture):
`systemctl` there is a shim whose stop/restart change the unit file the rows read, so
an action is seen in the next refresh. Every action is confirmed in the console's own
dialogs, the host is re-checked (uname -n and boot id) just before acting, and requests,
outcomes and refusals land in the audit log; a read-only fleet is refused, audited.
The cleanup ends a real orphaned "VLLM::Worker" process that the box's nvidia-smi
lists, and only that one (other processes on this machine are filtered out).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Button

from tests.support.fleet_fixtures import (
    FLEET_CONNECT_TIMEOUT_S,
    SshdFleet,
    fleet_collector,
    running_fleet,
    status_shell_pids,
)
from tests.support.procs_fixtures import proc_state, spawn_pid1_orphan, wait_until
from tests.support.sshd_fixtures import SshdPair, sshd_pair  # noqa: F401  (fixture)
from tests.support.waiting import pilot_wait
from tui.app.fleet_app import FleetApp
from tui.core.audit import read_audit
from tui.core.errors import ServedeckError
from tui.fleet.actions import (
    HostIdentity,
    ReadOnlyRefused,
    plan_cleanup,
    plan_service,
    run_cleanup,
    run_service,
)
from tui.fleet.collector import FleetCollector
from tui.fleet.deck_probe import DeckProbe
from tui.hosts.ssh import SSHHost
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.kill_confirm import KillConfirmScreen

pytestmark = pytest.mark.sshd

HOST_TIMEOUT_S = 30.0


@pytest.fixture
def pid1_orphan() -> Iterator[int]:
    """A real orphaned worker; SIGKILLed through a pidfd at teardown if still there."""
    pid, pidfd = spawn_pid1_orphan()
    try:
        assert wait_until(lambda: _ppid(pid) == 1, 10), _ppid(pid)
        yield pid
    finally:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        os.close(pidfd)


def _ppid(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rfind(")") + 2 :].split()[1])


@pytest.fixture(scope="module")
def two_boxes(
    sshd_pair: SshdPair,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SshdFleet]:
    with running_fleet(
        sshd_pair, "http://127.0.0.1:9", tmp_path_factory.mktemp("fleet"), ("loading", "failed")
    ) as fleet:
        yield fleet


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the group's members are found in ./profiles


def _deck(collector: FleetCollector, name: str) -> DeckProbe:
    probe = collector.probe(name)
    assert isinstance(probe, DeckProbe)
    return probe


def _calls(fleet: SshdFleet, index: int) -> str:
    path = fleet.hosts[index].box_dir / "systemctl.calls"
    return path.read_text() if path.exists() else ""


async def _confirm(app: FleetApp, pilot: object) -> None:
    """Press the dialog's confirm button (the safe one has the focus)."""
    await pilot.pause(0.2)  # type: ignore[attr-defined]
    app.screen.query_one("#confirm-yes", Button).press()


def _notes(app: FleetApp) -> list[str]:
    return [note.message for note in app._notifications]


async def _select(app: FleetApp, pilot: object, host: str) -> None:
    """Filter the table down to one host (so the cursor is on it)."""
    await pilot_wait(pilot, lambda: app.refreshes >= 1 and app.rows, "a first refresh")
    await pilot.press("slash", *host, "enter")  # type: ignore[attr-defined]
    await pilot_wait(pilot, lambda: app.query_one("FleetTable").selected_host() == host, host)


async def test_stop_then_restart_from_the_fleet_confirmed_and_audited(
    two_boxes: SshdFleet, tmp_path: Path
) -> None:
    collector = fleet_collector(two_boxes, tmp_path)
    box = two_boxes.hosts[0]
    app = FleetApp(collector, interval_s=0.5)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await _select(app, pilot, box.name)
            await pilot.press("X")
            await pilot_wait(
                pilot, lambda: isinstance(app.screen, ConfirmActionScreen), "the dialog"
            )
            dialog = app.screen
            assert isinstance(dialog, ConfirmActionScreen) and dialog.action.verb == "stop"
            assert dialog.action.unit == "vllm.service" and "systemctl stop" in (
                dialog.action.command_line
            )
            assert "checked again just before acting" in dialog.note
            await pilot.press("escape")  # cancelled: nothing runs
            await pilot.pause(0.5)
            assert _calls(two_boxes, 0) == ""

            await pilot.press("X")
            await pilot_wait(
                pilot, lambda: isinstance(app.screen, ConfirmActionScreen), "the dialog"
            )
            await _confirm(app, pilot)
            await pilot_wait(
                pilot, lambda: "stop" in _calls(two_boxes, 0), lambda: f"stop {_notes(app)}"
            )
            await pilot_wait(
                pilot,
                lambda: any(r.host == box.name and r.unit_state == "inactive" for r in app.rows),
                "the row showing the unit stopped",
            )
            await pilot_wait(
                pilot, lambda: "stop vllm.service: done" in app.last_action, "the report"
            )

            await pilot.press("R")
            await pilot_wait(
                pilot, lambda: isinstance(app.screen, ConfirmActionScreen), "the dialog"
            )
            await _confirm(app, pilot)
            await pilot_wait(
                pilot,
                lambda: any(r.host == box.name and r.unit_state == "active" for r in app.rows),
                "the row showing the unit running again",
            )
    finally:
        await collector.close()
    assert _calls(two_boxes, 0).split("\n")[:2] == ["stop vllm.service", "restart vllm.service"]
    assert _calls(two_boxes, 1) == ""  # the other host was never touched
    events = [(r["event"], r.get("action"), r.get("ok")) for r in read_audit()]
    assert events == [
        ("service.request", "stop", None),
        ("service.outcome", "stop", True),
        ("service.request", "restart", None),
        ("service.outcome", "restart", True),
    ]
    assert {r["host"] for r in read_audit()} == {_deck(collector, box.name).deck.host_label}


async def test_read_only_fleet_refuses_every_action_audited(
    two_boxes: SshdFleet, tmp_path: Path
) -> None:
    collector = fleet_collector(two_boxes, tmp_path, read_only=True)
    app = FleetApp(collector, interval_s=0.5)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await _select(app, pilot, two_boxes.hosts[1].name)
            for key in ("X", "R", "K"):
                await pilot.press(key)
                await pilot.pause(0.3)
            await pilot_wait(pilot, lambda: len(list(read_audit())) >= 3, "three refusals")
            assert not isinstance(app.screen, ConfirmActionScreen | KillConfirmScreen)
    finally:
        await collector.close()
    records = list(read_audit())
    assert [r["event"] for r in records] == ["service.refused", "service.refused", "fleet.refused"]
    assert all("read-only" in r["reason"] for r in records)
    assert _calls(two_boxes, 1) == ""


async def test_a_changed_host_identity_is_refused_before_acting(
    two_boxes: SshdFleet, tmp_path: Path
) -> None:
    collector = fleet_collector(two_boxes, tmp_path)
    try:
        deck = _deck(collector, two_boxes.hosts[1].name).deck
        plan = await plan_service("host1", deck, "stop")
        assert plan.identity.node and plan.identity.boot_id  # read over SSH
        moved = replace(plan, identity=HostIdentity("another-box", "0" * 32))
        with pytest.raises(ServedeckError, match="host identity changed"):
            await run_service(moved, deck, confirmed=True)
        with pytest.raises(ServedeckError, match="not confirmed"):
            await run_service(plan, deck, confirmed=False)
    finally:
        await collector.close()
    assert _calls(two_boxes, 1) == ""
    refusals = [(r["event"], r["reason"]) for r in read_audit()]
    assert refusals[0][0] == "fleet.refused" and "another-box" in refusals[0][1]
    assert refusals[1] == ("service.refused", "not confirmed")


async def test_cleanup_ends_a_real_leftover_on_the_host(
    two_boxes: SshdFleet,
    tmp_path: Path,
    pid1_orphan: int,
) -> None:
    box = two_boxes.hosts[1]  # the failed box: its unit is not running
    apps = box.box_dir / "handmade_8x_h200_compute_apps.csv"
    saved = apps.read_text()
    uuid = saved.split(",")[0]
    apps.write_text(f"{uuid}, {pid1_orphan}, 20480, VLLM::Worker_TP0\n")
    collector = fleet_collector(two_boxes, tmp_path)
    try:
        deck = _deck(collector, box.name).deck
        plan = await plan_cleanup(box.name, deck)
        mine = tuple(proc for proc in plan.targets if proc.pid == pid1_orphan)
        assert mine and mine[0].klass == "leftover", plan
        # Only our own orphan: other leftovers on this shared machine are not ours to end.
        report = await run_cleanup(replace(plan, targets=mine), deck, timeout_s=5.0)
        assert report.all_ended, report
        assert wait_until(lambda: proc_state(pid1_orphan) in (None, "Z"), 30)
    finally:
        apps.write_text(saved)
        await collector.close()
    events = [r["event"] for r in read_audit()]
    assert "kill-request" in events or any(e.startswith("kill") for e in events), events
    with pytest.raises(ReadOnlyRefused):
        ro = fleet_collector(two_boxes, tmp_path, read_only=True)
        try:
            await plan_cleanup(box.name, _deck(ro, box.name).deck)
        finally:
            await ro.close()


async def test_a_host_too_busy_to_start_a_session_is_slow_not_lost(
    two_boxes: SshdFleet, tmp_path: Path
) -> None:
    """Sessions that do not start within the connect timeout: `slow`, last figures kept.

    While its status shell runs, a poll starts no session, so slow logins do not matter;
    once that shell is gone (killed on the box), the poll needs a session: `slow`.
    """
    from tui.fleet.view import host_state

    box = two_boxes.hosts[0]  # loading
    collector = fleet_collector(two_boxes, tmp_path)
    probe = _deck(collector, box.name)
    flag = box.box_dir / "slow-login"
    try:
        first = await asyncio.wait_for(probe.poll(), 60)
        assert host_state(first) == "loading" and first.reachable, first.error
        flag.write_text(f"{FLEET_CONNECT_TIMEOUT_S + 5:g}")  # longer than connect_timeout_s
        still = await asyncio.wait_for(probe.poll(), 60)  # through the running status shell
        assert host_state(still) == "loading", still.error  # (the GPUs may still be warming)
        assert "did not start" not in (still.error or ""), still.error
        assert probe._loop is not None
        for pid in status_shell_pids(probe._loop._marker):
            os.kill(pid, signal.SIGKILL)
        slow = await asyncio.wait_for(probe.poll(), 60)
        assert host_state(slow) == "slow", slow.error
        assert slow.error and f"did not start within {FLEET_CONNECT_TIMEOUT_S:g} s" in slow.error
        assert slow.phase == first.phase and slow.shards_total == first.shards_total
        assert isinstance(probe.deck.host, SSHHost) and probe.deck.host.connected
        flag.unlink()
        again = await asyncio.wait_for(probe.poll(), 60)
        assert host_state(again) == "loading" and again.error is None, again.error
    finally:
        flag.unlink(missing_ok=True)
        await collector.close()
