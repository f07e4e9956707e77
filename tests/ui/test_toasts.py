"""Toasts expire and never draw over a dialog (issue item 14, the console's part).

Notifications are on (run_test turns them off by default). The dialog is the kill
confirmation; a toast raised while it is open shows once it closes.
"""

from __future__ import annotations

import time

from tests.support.screen_text import screen_lines, screen_text
from tests.ui.test_procs_ui import SEED
from tui.app import ServedeckApp
from tui.core.profile_store import load_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.screens.kill_confirm import KillConfirmScreen


def console() -> ServedeckApp:
    profile = load_profile(None)
    return ServedeckApp(profile, Deck(profile, LocalHost()))


async def test_toasts_never_cover_a_dialog() -> None:
    app = console()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause(0.3)
        app.clear_notifications()
        app.notify("memory was freed on gpu-box-01", timeout=30)
        await pilot.pause(0.3)
        assert "memory was freed" in screen_text(app)
        app.push_screen(KillConfirmScreen("gpu-box-01", SEED.processes[1:3], timeout_s=15.0))
        await pilot.pause(0.3)
        app.notify("host unreachable: gpu-box-01", timeout=30)
        await pilot.pause(0.3)
        dialog = app.screen.query_one("KillConfirmScreen > Vertical").region
        lines = screen_lines(app)
        over = "\n".join(lines[dialog.y : dialog.bottom])
        assert "memory was freed" not in over and "unreachable" not in over, "\n".join(lines)
        await pilot.press("escape")
        await pilot.pause(0.3)
        shown = screen_text(app)
        assert "memory was freed" in shown and "unreachable" in shown, shown


async def test_a_toast_is_gone_soon_after_its_timeout_on_the_bench_pane() -> None:
    app = console()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause(0.3)
        app.clear_notifications()
        await pilot.press("4")
        app.notify("quick: 65.4 tok/s per stream", title="Benchmark", timeout=1.0)
        await pilot.pause(0.3)
        assert "65.4 tok/s" in screen_text(app)
        deadline = time.monotonic() + 10
        while "65.4 tok/s" in screen_text(app) and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert "65.4 tok/s" not in screen_text(app)
        assert not list(app._notifications)
