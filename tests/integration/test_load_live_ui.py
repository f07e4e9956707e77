"""The load explainer live on the Deck, on the simulator's load (Textual run_test, headless).

The simulated server reads real shard files (tui.sim.shards), dropped from the page
cache first, at a set disk rate, so the serving process's /proc/PID/io really counts
the bytes: while it loads, the line under the load strip says the load is reading a
cold checkpoint, then moves on with the log's phases, and after ready it becomes the
after-ready diagnosis. The faults: the serving process SIGKILLed mid-load (the line
says where the load ended and why), and the load watched over a real sshd as a user
who may not read the root-owned service's /proc/PID/io (the line says so; nothing exits).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.sshd_fixtures import SshdPair
from tui.app import ServedeckApp
from tui.app.console_workers import WorkerFailed
from tui.core.config import demo_profile
from tui.deck import Deck
from tui.hosts import LocalHost
from tui.hosts.base import Host
from tui.record.query import RecordingReader
from tui.screens.confirm_action import ConfirmActionScreen
from tui.serving.load.io import drop_from_cache
from tui.serving.load.live import LiveLoad
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.deck import SimDeck
from tui.sim.shards import make_shards
from widgets.load_why import LoadWhy

MIB = 1024**2


async def until(pilot, predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def demo_deck(box: SimBox, host: Host | None = None) -> Deck:
    """The demo's Deck over a box built here (slow-disk options), as tui.compose.open_deck does."""
    profile = demo_profile()
    profile = replace(profile, service=replace(profile.service, base_url=box.base_url))
    return SimDeck(profile, host or LocalHost(label="simulator"), box)


class Seen:
    """Every distinct reading the Deck's line drew, in order."""

    def __init__(self, app: ServedeckApp) -> None:
        self.app = app
        self.readings: list[LiveLoad] = []

    def take(self) -> LiveLoad | None:
        widget = self.app.query_one(LoadWhy)
        live = widget.live if widget.display else None
        if live is not None and (not self.readings or self.readings[-1] is not live):
            self.readings.append(live)
        return live


async def start_load(pilot, app: ServedeckApp) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: app.unit_state is not None, 30, "the unit's state")
    assert not app.query_one(LoadWhy).display, "no load yet: no line"
    await pilot.press("S")
    await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 20, "ask")
    await pilot.press("shift+tab", "enter")


@pytest.mark.timeout(240)
async def test_live_line_follows_a_cold_load_then_shows_the_diagnosis(tmp_path: Path) -> None:
    shard_dir = tmp_path / "model"
    make_shards(shard_dir, 4, 16 * MIB)
    dropped = await drop_from_cache(LocalHost(), str(shard_dir))
    if dropped.resident_bytes:
        pytest.skip("this filesystem keeps the pages (tmpfs): no cold load to see")
    # 64 MiB at 8 MiB/s: the weights phase is paced by the disk for about 8 s.
    options = SimServerOptions(
        shards=4, shard_dir=str(shard_dir), disk_bytes_per_s=8 * MIB, orphans_on_stop=0
    )
    box = SimBox(load_seconds=12.0, options=options)
    deck = demo_deck(box)
    app = ServedeckApp(deck.profile, deck)
    app.load_live.poll_s = 0.5
    seen = Seen(app)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await start_load(pilot, app)

            def final() -> bool:
                live = seen.take()
                return live is not None and live.final

            await until(pilot, final, 120, "the diagnosis on the Deck")
            db_path = app.record.recording.db_path if app.record.recording is not None else None
    finally:
        await deck.close()
    # The flight recorder kept what the line said (each change, not each sample).
    assert db_path is not None
    with RecordingReader(db_path) as reader:
        recorded = [e.text for e in reader.events(search="load ") if e.source == "load"]
    assert any(t.startswith("load explainer: weights") for t in recorded), recorded
    assert any(t.startswith("load diagnosis: load ") for t in recorded), recorded
    live = [r for r in seen.readings if not r.final]
    for reading in live:
        print(reading.text)
    print(seen.readings[-1].text)
    weights = [r for r in live if r.phase == "weights" and r.bound == "io"]
    assert weights, "a reading while the weights were read from the disk"
    reading = max(weights, key=lambda r: r.read_bytes_per_s or 0)
    assert reading.read_bytes_per_s is not None and reading.read_bytes_per_s > 2 * MIB
    assert reading.cache_resident_start_pct is not None and reading.cache_resident_start_pct < 5
    # Caught mid-read at least once (the fastest reading may come as the last shard lands).
    assert any(r.cache_resident_pct is not None and r.cache_resident_pct < 90 for r in weights)
    # Residency is re-read as the load goes: the shards come into the page cache.
    assert max(r.cache_resident_pct or 0 for r in live) > reading.cache_resident_start_pct
    assert "I/O-bound: reading a cold checkpoint" in reading.text
    assert reading.text.startswith("weights ")
    later = {r.phase for r in live} - {"starting", "weights"}
    assert later, f"the line moves on with the log's phases, saw {[r.phase for r in live]}"
    assert all(r.problem is None for r in live if r.phase == "weights")
    done = seen.readings[-1]
    assert done.final and done.phase == "serving"
    assert done.text.startswith("load ") and "next load" in done.text
    note = next(n for n in app._notifications if n.title == "Load")
    assert note.message.startswith(done.text)


@pytest.mark.timeout(240)
async def test_serving_process_killed_mid_load_is_a_state_on_the_line() -> None:
    box = SimBox(load_seconds=40.0, options=SimServerOptions(orphans_on_stop=0))
    deck = demo_deck(box)
    app = ServedeckApp(deck.profile, deck)
    app.load_live.poll_s = 0.5
    seen = Seen(app)
    failures: list[WorkerFailed] = []
    try:
        async with app.run_test(size=(140, 40), message_hook=_collect(failures)) as pilot:
            await start_load(pilot, app)

            def loading_weights() -> bool:
                live = seen.take()
                return live is not None and live.phase == "weights"

            await until(pilot, loading_weights, 60, "a live reading in the weights phase")
            pid = box.unit.main_pid
            assert pid
            os.kill(pid, signal.SIGKILL)

            def ended() -> bool:
                live = seen.take()
                return live is not None and live.final

            await until(pilot, ended, 60, "the line saying the load ended")
            assert app.is_running
    finally:
        await deck.close()
    done = seen.readings[-1]
    print(done.text)
    assert done.text.startswith("load ended in weights after ")
    assert f"serving process {pid} is gone" in done.text
    assert done.problem and not [f for f in failures if f.pane == "deck"]


def _collect(failures: list[WorkerFailed]):  # type: ignore[no-untyped-def]
    def hook(message: object) -> None:
        if isinstance(message, WorkerFailed):
            failures.append(message)

    return hook


@pytest.mark.sshd
@pytest.mark.timeout(240)
async def test_proc_io_unreadable_over_ssh_is_said_on_the_line(sshd: SshdPair) -> None:
    """The service runs as root; the operator's SSH login is an ordinary user, who may
    read /proc/PID/stat but not /proc/PID/io of another user's process."""
    if sshd.zsh_user is None:
        pytest.skip("needs root to create the unprivileged test user")
    from tui.hosts.ssh import SSHHost

    # Shards that user may read (the residency and the disk stay visible), read slowly.
    shard_dir = Path(tempfile.mkdtemp(prefix="servedeck-live-ssh-"))
    shard_dir.chmod(0o755)
    make_shards(shard_dir, 4, 16 * MIB)
    await drop_from_cache(LocalHost(), str(shard_dir))
    options = SimServerOptions(
        shards=4, shard_dir=str(shard_dir), disk_bytes_per_s=4 * MIB, orphans_on_stop=0
    )
    box = SimBox(load_seconds=40.0, options=options)
    box.state_dir.chmod(0o755)  # the log is read over SSH by that user
    deck = demo_deck(box, SSHHost(sshd.host_config(user=sshd.zsh_user)))
    app = ServedeckApp(deck.profile, deck)
    app.load_live.poll_s = 0.5
    seen = Seen(app)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await start_load(pilot, app)

            def unreadable() -> bool:
                live = seen.take()
                return live is not None and "unreadable" in (live.problem or "")

            await until(pilot, unreadable, 90, "the line saying /proc/PID/io is unreadable")
            await pilot.pause(1.5)  # a few more readings: still a state, never an exit
            seen.take()
            assert app.is_running
    finally:
        await deck.close()
        shutil.rmtree(shard_dir, ignore_errors=True)
    for reading in seen.readings:
        print(reading.text)
    unreadable = [r for r in seen.readings if "/io unreadable" in (r.problem or "")]
    assert all(r.read_bytes_per_s is None for r in unreadable)  # unknown, not "read nothing"
    assert all(r.cpu_cores is not None for r in unreadable[1:])  # /proc/PID/stat still tells
    # "waiting" only on a figure: the disk's read rate, the one read figure left.
    assert all(r.device_read_bytes_per_s is not None for r in unreadable if r.bound == "wait")
    assert "read rate from the disk only" in unreadable[-1].text
    # mincore reports another user's read-only shards as all cached: no residency figure.
    assert all(r.cache_resident_pct is None for r in seen.readings)


@pytest.mark.timeout(240)
async def test_a_rank_whose_weights_lag_is_named_on_the_line() -> None:
    """The simulator's rank 3 fills its GPU at a third of the others' pace."""
    box = SimBox(load_seconds=30.0, options=SimServerOptions(orphans_on_stop=0, lagging_rank=3))
    deck = demo_deck(box)
    app = ServedeckApp(deck.profile, deck)
    app.load_live.poll_s = 0.5
    seen = Seen(app)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await start_load(pilot, app)

            def lagging() -> bool:
                live = seen.take()
                return live is not None and live.lagging_gpu is not None

            await until(pilot, lagging, 90, "a reading that names the lagging GPU")
    finally:
        await deck.close()
    reading = seen.readings[-1]
    print(reading.text)
    assert reading.phase == "weights" and reading.lagging_gpu == 3
    assert "GPU 3 lags: " in reading.text
    # Before the weights came in no GPU lagged: the ranks held only their CUDA context.
    assert all(r.lagging_gpu is None for r in seen.readings if r.phase == "starting")


@pytest.mark.sshd
@pytest.mark.timeout(300)
async def test_ssh_host_lost_mid_load_is_a_state_then_readings_resume(sshd: SshdPair) -> None:
    """A dropped connection is re-made unseen; an sshd that is gone is a state on the line
    until it is back."""
    box = SimBox(load_seconds=90.0, options=SimServerOptions(orphans_on_stop=0))
    box.state_dir.chmod(0o755)
    from tui.hosts.ssh import SSHHost

    deck = demo_deck(box, SSHHost(sshd.host_config()))
    app = ServedeckApp(deck.profile, deck)
    app.load_live.poll_s = 0.5
    seen = Seen(app)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await start_load(pilot, app)

            def good_after(index: int) -> bool:
                seen.take()
                return any(
                    r.problem is None and r.bound != "unknown" for r in seen.readings[index:]
                )

            await until(pilot, lambda: good_after(0), 90, "a reading over SSH")
            dropped = len(seen.readings)
            sshd.first.kill_connections()  # cut: the host connects again by itself
            await until(pilot, lambda: good_after(dropped), 60, "readings after the cut")
            assert not [r for r in seen.readings[dropped:] if r.final]

            sshd.first.stop()  # gone: each reading fails until it is back

            def failed() -> bool:
                seen.take()
                return any(r.problem for r in seen.readings[dropped:])

            await until(pilot, failed, 90, "a reading that says the host is lost")
            lost = len(seen.readings)
            sshd.first.start()
            await until(pilot, lambda: good_after(lost), 90, "readings once sshd is back")
            assert app.is_running
    finally:
        await deck.close()
    failure = next(r for r in seen.readings[dropped:] if r.problem)
    print(failure.text)
    assert failure.problem is not None and failure.problem.startswith("load counters unreadable: ")
    assert failure.read_bytes_per_s is None and not failure.final
