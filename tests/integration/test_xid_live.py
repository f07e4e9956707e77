"""XIDs followed live: kernel lines written to a real journal (systemd-journal-remote)
reach the console's Health pane, the GPU table's badge, the recording's Timeline and
the alert rules within seconds; a lost kernel log is a state on the Health pane."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.integration.test_health_xid import BUSES, LINES, KernelJournal
from tests.support.sshd_fixtures import SshdPair
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import demo_profile
from tui.health.xid.decode import XidEvent
from tui.health.xid.follow import KERNEL_JOURNAL_ENV, FollowState, follow_xids
from tui.hosts.ssh import SSHHost
from tui.record.query import RecordingReader
from tui.screens.timeline import TimelineScreen
from tui.sim.health import xid_line
from widgets.gpu_table import GpuTable


async def _until(pilot, predicate: Callable[[], object], timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await (pilot.pause(0.02) if pilot is not None else asyncio.sleep(0.02))


@pytest.fixture
def kernel_journal(tmp_path: Path):  # type: ignore[no-untyped-def]
    writer = KernelJournal(tmp_path / "kernel.journal")
    writer.write_kernel("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.95.05")
    writer.wait_visible(1)
    yield writer
    writer.close()


def _recorded_xids(app: ServedeckApp) -> list[str]:
    assert app.record.recording is not None
    with RecordingReader(app.record.recording.db_path) as reader:
        return [e.text for e in reader.iter_events() if e.source == "xid"]


async def test_console_follows_xids_to_pane_badge_timeline_and_alert(
    monkeypatch: pytest.MonkeyPatch, kernel_journal: KernelJournal
) -> None:
    monkeypatch.setenv(KERNEL_JOURNAL_ENV, str(kernel_journal.path))
    deck = open_deck(demo_profile())
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(160, 50)) as pilot:
        kernel = app.query_one("#health-kernel", Static)
        await _until(
            pilot, lambda: "following XIDs (journal)" in str(kernel.render()), 60, "the follow"
        )
        table = app.query_one(GpuTable)
        assert table.cell("gpu-5", "gpu") == "5"
        written = time.monotonic()
        kernel_journal.write_kernel("usb 1-1: new device", xid_line(79, 5), "garbage \x1b[31m")
        await _until(pilot, lambda: table.cell("gpu-5", "gpu").endswith("X[/]"), 30, "the badge")
        delay_s = time.monotonic() - written
        print(f"XID line to GPU badge: {delay_s:.2f} s")
        assert delay_s < 5.0
        body = app.query_one("#health-body", Static)
        assert "XID 79 GPU has fallen off the bus" in str(body.render())
        monitor = app.record.recording.monitor  # type: ignore[union-attr]
        fired = {(c.rule.name, c.gpu, c.state) for c in monitor.changes}
        assert {("gpu-xid", 5, "firing"), ("gpu-xid-critical", 5, "firing")} <= fired
        # A contained XID (warning) on GPU 1: the warning rule only.
        kernel_journal.write_kernel(xid_line(43, 1))
        await _until(pilot, lambda: table.cell("gpu-1", "gpu").endswith("X[/]"), 30, "XID 43")
        fired = {(c.rule.name, c.gpu) for c in monitor.changes}
        assert ("gpu-xid", 1) in fired and ("gpu-xid-critical", 1) not in fired
        # On the Timeline (the recording), once each, with the GPU and the action.
        await _until(pilot, lambda: len(_recorded_xids(app)) >= 2, 30, "the recorded XIDs")
        texts = _recorded_xids(app)
        assert texts == [
            "XID 79 on GPU 5: GPU has fallen off the bus -> reboot the node; RMA if it repeats",
            "XID 43 on GPU 1: GPU stopped processing -> restart the engine",
        ]
        await pilot.press("T")  # the Timeline: the XIDs and their alerts
        await _until(pilot, lambda: isinstance(app.screen, TimelineScreen), 30, "the Timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        await _until(pilot, lambda: any(e.source == "xid" for e in screen.events), 30, "events")
        shown = [e.text for e in screen.events]
        assert any(t.startswith("XID 79 on GPU 5") for t in shown)
        assert any(
            t.startswith("CRITICAL XID that needs a GPU reset or reboot on GPU 5") for t in shown
        )
        await pilot.press("escape")
        await pilot.press("q")


async def test_console_shows_a_lost_kernel_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(KERNEL_JOURNAL_ENV, str(tmp_path / "gone.journal"))
    deck = open_deck(demo_profile())
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(120, 36)) as pilot:
        kernel = app.query_one("#health-kernel", Static)
        await _until(pilot, lambda: "lost" in str(kernel.render()), 60, "the lost state")
        text = str(kernel.render())
        assert text.startswith("kernel log (XIDs) lost: journal stream ended")
        assert kernel.has_class("-failing")
        assert app.sources.health["kernel"].failing
        await pilot.press("7")  # the pane still draws the rest of the health
        body = app.query_one("#health-body", Static)
        await _until(pilot, lambda: "GPU7" in str(body.render()), 60, "the health report")
        await pilot.press("q")


@pytest.mark.sshd
async def test_follow_over_ssh_reports_lost_and_resumes_without_repeats(
    sshd: SshdPair, kernel_journal: KernelJournal
) -> None:
    host = SSHHost(sshd.host_config())
    events: list[XidEvent] = []
    states: list[FollowState] = []
    task = asyncio.create_task(
        follow_xids(host, BUSES, events.append, states.append, str(kernel_journal.path))
    )
    try:
        await _until(None, lambda: states and states[-1].following, 60, "following")
        kernel_journal.write_kernel(LINES[0][0])
        await _until(None, lambda: len(events) == 1, 30, "the first XID")
        assert sshd.first.kill_connections() >= 1
        await _until(None, lambda: not states[-1].following, 30, "the lost state")
        assert states[-1].reason == "journal stream ended; resuming"
        kernel_journal.write_kernel(LINES[1][0])  # while the connection is down
        await _until(None, lambda: states[-1].following and len(events) >= 2, 60, "the resume")
        await asyncio.sleep(0.5)
        assert [(e.xid, e.gpu_index) for e in events] == [(79, 2), (13, 0)]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await host.close()


async def test_servedeck_record_follows_xids_and_alerts(
    monkeypatch: pytest.MonkeyPatch, kernel_journal: KernelJournal
) -> None:
    """The headless recorder (`servedeck record`): the same follow, feed and rules."""
    from tests.core.test_xid_alerts import ListSink
    from tui.alerts.monitor import AlertMonitor
    from tui.core.alert_rules import AlertingConfig
    from tui.record.feed import RecordFeed
    from tui.record.headless import Cadence, HeadlessRecorder

    monkeypatch.setenv(KERNEL_JOURNAL_ENV, str(kernel_journal.path))
    deck = open_deck(demo_profile())
    sink = ListSink()
    feed = RecordFeed(sink, deck.host_label)
    monitor = AlertMonitor(AlertingConfig(), deck.host_label, feed=feed)
    stop = asyncio.Event()
    recorder = HeadlessRecorder(deck, feed, Cadence(gpu_s=0.5, service_s=0.5), monitor)
    task = asyncio.create_task(recorder.run(None, stop))
    try:
        await _until(None, lambda: recorder.last_gpu is not None, 60, "a GPU sample")
        # Logged whenever: the follow starts with this boot's backlog, then follows.
        kernel_journal.write_kernel(xid_line(95, 3))
        await _until(
            None, lambda: any(e.source == "xid" for e in sink.events), 30, "the recorded XID"
        )
        xid = next(e for e in sink.events if e.source == "xid")
        assert xid.gpu == 3 and xid.text.startswith("XID 95 on GPU 3: Uncontained ECC error")
        await _until(
            None,
            lambda: any(c.rule.name == "gpu-xid-critical" for c in monitor.changes),
            30,
            "the alert",
        )
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
        await deck.close()


async def test_demo_badges_from_the_counters_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """No kernel log to follow on the simulated box: its XIDs and counters still mark the
    GPUs from the first sample on, without visiting the Health pane."""
    monkeypatch.setenv("SERVEDECK_SIM_XID", "63@2")
    deck = open_deck(demo_profile())
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.query_one(GpuTable)
        await _until(pilot, lambda: "gpu-2" in table.row_keys, 60, "the GPU rows")
        await _until(pilot, lambda: table.cell("gpu-2", "gpu").endswith("X[/]"), 30, "the mark")
        assert table.cell("gpu-3", "gpu") == "3"
        kernel = app.query_one("#health-kernel", Static)
        assert str(kernel.render()) == "Kernel log: following XIDs (simulated)"
        body = str(app.query_one("#health-body", Static).render())
        assert "row remap / page retirement pending" in body and "NVLink errors n/a" in body
        await pilot.press("q")
