"""The two faults that used to end the console, over a real sshd, and `c` cancelling a benchmark.

- `K` (clean up leftovers) while the host is unreachable: the refresh-then-kill worker
  raised HostError and Textual's `@work` exited the app.
- The SSH connection dropping while the console waits for the server to become ready:
  `_probe_readiness` raised HostError (the port forward) and the app exited.
Both now end as a state on the pane, an "Action failed" notification for the operator's
own action, and an audit record, with the console still running.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.screen_text import screen_text
from tests.support.sshd_fixtures import SshdPair
from tui.app import ServedeckApp
from tui.bench.history import read_history
from tui.compose import open_deck
from tui.core.audit import read_audit
from tui.core.config import Profile, ServiceConfig, demo_profile
from tui.deck import Deck
from tui.hosts.ssh import SSHHost
from widgets.header_bar import HeaderBar
from widgets.service_line import ServiceLine

WAIT_S = 60.0

pytestmark = pytest.mark.usefixtures("private_home")


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, read, released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _until(pilot: object, predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)  # type: ignore[attr-defined]


def _notes(app: ServedeckApp) -> list[str]:
    return [f"{note.title}: {note.message}" for note in app._notifications]


@pytest.mark.sshd
async def test_clean_up_while_the_host_is_unreachable_keeps_the_console(sshd: SshdPair) -> None:
    config = sshd.host_config(port=_closed_port(), connect_timeout_s=3.0)
    profile = Profile(name="gone", host=config, service=ServiceConfig(unit="vllm.service"))
    app = ServedeckApp(profile, Deck(profile, SSHHost(config)))
    async with app.run_test(size=(120, 36)) as pilot:
        header = app.query_one(HeaderBar)
        await _until(pilot, lambda: header.connection_state != "connecting", "the first failure")
        await pilot.press("K")
        await _until(pilot, lambda: any("Action failed" in n for n in _notes(app)), "the toast")
        assert app.is_running and not app._exit
        note = next(n for n in _notes(app) if "Action failed" in n)
        assert "leftover GPU processes" in note and "Nothing else was done" in note
        assert "refused" in note.lower() or "connect" in note.lower(), note
        # The service state is unknown, not "stopped"; no service action is offered.
        await _until(
            pilot, lambda: app.sources.service_unknown_since_s is not None, "unknown state"
        )
        line = str(app.query_one(ServiceLine).render())
        assert "unknown (host unreachable since" in line, line
        strip = str(app.query_one("#load-strip").render())
        assert "stopped" not in strip and "unknown (host unreachable since" in strip, strip
        # While the state is unknown no service action is offered: the key does nothing.
        assert not app.check_action("service", ("start",))
        await pilot.press("S")
        await pilot.pause(0.2)
        assert type(app.screen).__name__ != "ConfirmActionScreen"
        # Retries live in the header: one "Host unreachable" toast however long it lasts.
        await _until(pilot, lambda: app.sources.health["host"].failures >= 3, "three retries")
        assert sum("Host unreachable" in n for n in _notes(app)) == 1
        assert "retry in" in header.render().plain or header.connection_state == "reconnecting"
    failed = [r for r in read_audit() if r["event"] == "console.action_failed"]
    assert failed and "leftover" in failed[-1]["action"]


@pytest.mark.sshd
async def test_ssh_drop_while_waiting_for_readiness_keeps_the_console(sshd: SshdPair) -> None:
    config = sshd.host_config(connect_timeout_s=3.0)
    service = ServiceConfig(base_url=f"http://127.0.0.1:{_closed_port()}")
    profile = Profile(name="drop", host=config, service=service)
    app = ServedeckApp(profile, Deck(profile, SSHHost(config)))
    async with app.run_test(size=(120, 36)) as pilot:
        header = app.query_one(HeaderBar)
        await _until(pilot, lambda: header.connection_state == "connected", "the connection")
        sshd.first.stop()  # cuts every session and refuses new ones

        def probe_failed() -> bool:
            # What the load clock does each second while the log shows a load.
            if not app.sources.health["readiness"].failing:
                app.serving.probe_readiness()
            return app.sources.health["readiness"].failing

        await _until(pilot, probe_failed, "the readiness state")
        assert app.is_running and not app._exit
        assert "readiness probe lost" in str(app.query_one("#deck-note").render())
        sshd.first.start()
        await _until(pilot, lambda: header.connection_state == "connected", "the reconnection")


async def test_c_cancels_a_running_benchmark() -> None:
    base = demo_profile()
    deck = open_deck(base, demo_load_s=2.0, demo_autostart=True, demo_wait_ready=True)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(120, 36)) as pilot:
        app.action_bench("sweep")  # minutes long unless cancelled
        await _until(pilot, lambda: app.bench.process is not None, "the benchmark start")
        await pilot.pause(1.0)
        await pilot.press("c")
        await _until(pilot, lambda: app.bench.process is None, "the benchmark end")
    runs = [run for run in read_history() if run.preset == "sweep"]
    assert runs and runs[-1].partial


_SYSTEMCTL_SHIM = """#!/bin/sh
# A unit that reads as stopped but whose start is refused, as without the rights to start it.
if [ "$1" = show ]; then
  printf 'Id=vllm.service\\nLoadState=loaded\\nActiveState=inactive\\nSubState=dead\\n'
  exit 0
fi
echo "Failed to $1 $2: Interactive authentication required." >&2
exit 1
"""
_SUDO_SHIM = '#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n'


async def test_a_failing_service_action_says_what_failed_and_is_audited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`S` whose systemctl start fails (real shim processes on PATH): the error, nothing else."""
    from tests.support.console_support import local_console
    from tui.screens.confirm_action import ConfirmActionScreen

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("systemctl", _SYSTEMCTL_SHIM), ("sudo", _SUDO_SHIM)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    app, _host = local_console(30.0)
    async with app.run_test(size=(120, 36)) as pilot:
        await _until(pilot, lambda: bool(str(app.query_one(ServiceLine).render())), "the line")
        await pilot.press("S")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), "the question")
        screen = app.screen
        await _until(
            pilot, lambda: screen.focused is not None and screen.focused.id == "confirm-no", "focus"
        )
        await pilot.press("shift+tab", "enter")
        await _until(pilot, lambda: any("Action failed" in n for n in _notes(app)), "the toast")
        note = next(n for n in _notes(app) if "Action failed" in n)
        assert "Tried to start vllm.service on" in note and "Nothing else was done" in note, note
        assert app.is_running and not app._exit
    outcomes = [r for r in read_audit() if r["event"] == "service.outcome"]
    assert outcomes and outcomes[-1]["ok"] is False and outcomes[-1]["action"] == "start"


async def test_a_benchmark_against_a_stopped_service_is_not_offered_and_says_why() -> None:
    """`b` with the unit stopped: not in the footer, and asked anyway it says the service
    is stopped (it failed with a ConnectError to the dead port)."""
    from tui.core.config import demo_profile

    deck = open_deck(demo_profile())  # the simulator's unit is never started
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await _until(
                pilot,
                lambda: app.unit_state is not None and not app.unit_state.is_active,
                "the stopped unit",
            )
            await pilot.pause(0.3)
            assert " b Bench" not in screen_text(app)
            await pilot.press("b")  # not offered: nothing happens
            await pilot.pause(0.3)
            assert app.bench.process is None and not any("Benchmark" in n for n in _notes(app))
            app.action_bench()  # as the palette would
            await _until(
                pilot, lambda: any("nothing to benchmark" in n for n in _notes(app)), "why"
            )
            assert app.bench.process is None
    finally:
        await deck.close()


async def test_a_benchmark_against_a_dead_server_says_so_and_is_audited() -> None:
    """`b` with nothing listening: what was attempted, what failed, nothing else done."""
    from tui.core.config import demo_profile

    base = demo_profile()
    deck = open_deck(base)  # the simulator is never started: its port refuses
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await _until(pilot, lambda: app.unit_state is not None, "the unit's state")
            # The unit reads as running while nothing listens (a server that died without
            # systemd noticing): the benchmark is offered and fails.
            from dataclasses import replace as _replace

            app.service.unit_state = _replace(app.unit_state, active_state="active")
            app.action_bench()
            await _until(
                pilot, lambda: any("Benchmark failed" in n for n in _notes(app)), "the failure"
            )
            assert app.is_running and not app._exit
            await _until(pilot, lambda: app.bench.process is None, "the benchmark process gone")
        note = next(n for n in _notes(app) if "Benchmark failed" in n)
        assert "Tried to run a benchmark against simulator" in note, note
        assert "ConnectError" in note and "Nothing else was done" in note, note
        assert any(r["event"] == "bench.failed" for r in read_audit())
    finally:
        await deck.close()


async def test_an_export_that_cannot_write_says_so_and_is_audited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`E` with a data dir that is a file: the toast names the failure; nothing written."""
    from tui.core.config import demo_profile

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    deck = open_deck(demo_profile())
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            # The sources start after the first frame: only the export is to see the bad dir.
            await _until(pilot, lambda: app.record.recording is not None, "the sources started")
            monkeypatch.setenv("SERVEDECK_DATA_DIR", str(blocker))
            await pilot.press("E")
            await _until(pilot, lambda: any("failed" in n for n in _notes(app)), "the failure")
            note = next(n for n in _notes(app) if "failed" in n)
            assert "export the summary" in note and "Nothing" in note, note
            assert app.is_running and not app._exit
    finally:
        await deck.close()
    assert blocker.read_text() == ""
    assert any(
        r["event"] in ("console.action_failed", "summary.export_failed") for r in read_audit()
    )
