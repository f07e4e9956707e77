"""Every dialog opens on Cancel, and one Tab reaches the action (README: "tab, enter").

In the kill dialog Tab from Cancel went to the target list's scroll box, which shows no
focus: the Enter that followed did nothing. Each dialog is opened at 80x24 and 120x36.
"""

from __future__ import annotations

import pytest
from textual.screen import Screen
from textual.widgets import Button

from tests.ui.test_procs_ui import SEED
from tui.app import ServedeckApp
from tui.core.profile_store import load_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.screens.kill_confirm import KillConfirmScreen


def console() -> ServedeckApp:
    profile = load_profile(None)
    return ServedeckApp(profile, Deck(profile, LocalHost()))


def kill_dialog() -> Screen[object]:
    leftovers = [proc for proc in SEED.processes if proc.klass == "leftover"] or list(
        SEED.processes[1:3]
    )
    return KillConfirmScreen("gpu-box-01", leftovers, timeout_s=15.0)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_one_tab_from_cancel_reaches_kill(size: tuple[int, int]) -> None:
    app = console()
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        app.push_screen(kill_dialog())
        await pilot.pause(0.2)
        dialog = app.screen
        assert isinstance(dialog.focused, Button) and dialog.focused.id == "kill-cancel"
        await pilot.press("tab")
        assert isinstance(dialog.focused, Button), dialog.focused
        assert dialog.focused.id == "kill-confirm"
        await pilot.press("shift+tab")
        assert isinstance(dialog.focused, Button) and dialog.focused.id == "kill-cancel"
