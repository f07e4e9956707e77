"""The console's polls: one timer chain per poll, whatever runs them on demand; and quitting
lets every worker finish, so the event loop never closes on a half-started command.

On CPython 3.11, closing the event loop while asyncio is still connecting a new
subprocess's pipes makes the loop wait for that process forever (gh-125502): the
console would hang on quit. The console overview re-reads host vitals (in-process here, no `cat`) at
a short interval and the service poll starts a real `systemctl`, so workers are busy
at any instant the console quits; after each quit no worker may still be running or
about to start.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from textual.timer import Timer

import tui.deck as deck_module
from tests.support.console_support import local_console
from tui.app.console_service import SERVICE_POLL_S

ROUNDS = 12


OVERVIEW_SCRIPT = ("/bin/sh", "-s")
SERVICE_STATE = ("systemctl", "show")


async def test_r_pressed_again_and_again_gives_a_full_overview_and_one_poll_chain(
    monkeypatch: Any,
) -> None:
    vitals_at_s: list[float] = []
    real_refresh = deck_module.refresh_vitals

    async def counted_refresh(*args: Any, **kwargs: Any) -> Any:
        vitals_at_s.append(time.monotonic())
        return await real_refresh(*args, **kwargs)

    def vitals_reads(since_s: float = 0.0) -> int:
        return sum(1 for at_s in vitals_at_s if at_s >= since_s)

    monkeypatch.setattr(deck_module, "refresh_vitals", counted_refresh)
    interval_s = 0.2
    app, host = local_console(interval_s)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(60):
            await pilot.pause(0.1)
            if vitals_reads() >= 2:
                break
        for _ in range(6):  # some of these land while a read is running
            await pilot.press("r")
            await pilot.pause(0.03)
        for _ in range(50):
            await pilot.pause(0.1)
            if host.count(OVERVIEW_SCRIPT) >= 2:
                break
        assert host.count(OVERVIEW_SCRIPT) >= 2, host.commands
        window_start_s, window_s = time.monotonic(), 2.0
        await pilot.pause(window_s)
        reads = host.count(OVERVIEW_SCRIPT, window_start_s) + vitals_reads(window_start_s)
    # One chain reads once per interval (slower when the machine is busy); a chain per
    # press of `r` would read seven times as often.
    assert 2 <= reads <= window_s / interval_s + 3, host.commands


async def test_service_polled_on_demand_keeps_one_chain() -> None:
    app, host = local_console(30.0)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(50):
            await pilot.pause(0.1)
            if host.count(SERVICE_STATE) >= 1:
                break
        for _ in range(4):  # what a start, stop or restart does after it finished
            app.service.poll()
            await pilot.pause(0.1)
        window_start_s, window_s = time.monotonic(), 2 * SERVICE_POLL_S + 0.5
        await pilot.pause(window_s)
        polls = host.count(SERVICE_STATE, window_start_s)
    # One chain polls twice in the window (three times at most); five chains ten times.
    assert 1 <= polls <= 3, host.commands


async def test_poll_later_replaces_a_pending_run() -> None:
    """Five re-arms leave one timer: each earlier one is stopped, whatever the timing."""
    app, _ = local_console(30.0)
    runs: list[float] = []
    armed: list[Timer] = []
    async with app.run_test(size=(80, 24)) as pilot:
        arm = app.set_timer

        def spy(*args: Any, **kwargs: Any) -> Timer:
            armed.append(arm(*args, **kwargs))
            return armed[-1]

        app.set_timer = spy  # type: ignore[method-assign]
        for _ in range(5):
            app.poll_later(0.5, lambda: runs.append(time.monotonic()), "test-poll")
        app.set_timer = arm  # type: ignore[method-assign]
        assert len(armed) == 5
        assert app._poll_timers["test-poll"] is armed[-1]
        assert [timer._task is None for timer in armed] == [True] * 4 + [False]
        # The one left runs once: wait for it, not for a fixed time.
        deadline = time.monotonic() + 30
        while not runs and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert armed[-1]._task is None or armed[-1]._task.done()
    assert len(runs) == 1


def _unfinished_workers() -> list[asyncio.Task[object]]:
    current = asyncio.current_task()
    return [
        task
        for task in asyncio.all_tasks()
        if task is not current and not task.done() and "Worker._run" in repr(task.get_coro())
    ]


async def test_quit_leaves_no_worker_running_even_mid_command() -> None:
    rng = random.Random(7)
    total_started = 0
    for round_index in range(ROUNDS):
        app, host = local_console(0.01)
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(50):
                await pilot.pause(0.02)
                if len(host.commands) >= 3:
                    break
            await asyncio.sleep(rng.uniform(0.0, 0.02))  # quit at a different instant each round
        await asyncio.sleep(0)  # work asked for while quitting was cancelled before its first step
        left = _unfinished_workers()
        assert not left, f"round {round_index}: workers still running after quit: {left}"
        assert not host.started_while_quitting, (
            f"round {round_index}: commands started after quitting began: "
            f"{host.started_while_quitting}"
        )
        total_started += len(host.commands)
    assert total_started >= 3 * ROUNDS  # the overview really was polling when each quit came


async def test_a_steady_unit_is_read_seldom_and_at_once_when_its_main_pid_ends(
    monkeypatch: Any, tmp_path: Any
) -> None:
    """Each read of a unit is a `systemctl show` process (an SSH channel remotely): a unit
    steady in its state is read every SERVICE_SETTLED_POLL_S, not every second, and its
    main process ending (seen in /proc, no command) reads it within a second. The pace is
    shortened here; the stand-in systemctl answers `active` with a real process's pid."""
    import subprocess

    import tui.app.console_service as console_module
    from tests.support.procs_fixtures import install_systemctl, unit_show_text

    main = subprocess.Popen(["sleep", "600"])
    try:
        show = unit_show_text("vllm.service", "active").replace("MainPID=0", f"MainPID={main.pid}")
        install_systemctl(monkeypatch, tmp_path, show)
        monkeypatch.setattr(console_module, "SERVICE_SETTLE_S", 1.0)
        monkeypatch.setattr(console_module, "SERVICE_SETTLED_POLL_S", 4.0)
        app, host = local_console(30.0)
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(100):
                await pilot.pause(0.1)
                if app.unit_state is not None and app.unit_state.main_pid == main.pid:
                    break
            assert app.unit_state is not None and app.unit_state.is_active, host.commands
            await pilot.pause(1.5)  # settled
            window_start_s = time.monotonic()
            await pilot.pause(3.0)
            steady_reads = host.count(SERVICE_STATE, window_start_s)
            assert steady_reads <= 1, host.commands  # every second, it would read 3 times
            main.kill()
            main.wait()
            killed_s = time.monotonic()
            for _ in range(40):
                await pilot.pause(0.1)
                if host.count(SERVICE_STATE, killed_s):
                    break
            assert host.count(SERVICE_STATE, killed_s) >= 1, "the ended main pid was not read"
            assert time.monotonic() - killed_s < 3.0
    finally:
        main.kill()
        main.wait()
