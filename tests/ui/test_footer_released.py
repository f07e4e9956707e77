"""The console's footer releases the keys it redraws: each change of bindings (a tab, a
focus, a dialog) recomposes it, and Textual's `data_bind` leaves every old key in the
footer's watcher list until `compact` changes, which it never does (Textual issue #6666).
A night of tab switches and dialogs kept thousands of dead keys, ~1.5 MB an hour."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from textual.widgets._footer import FooterKey

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import Profile, ServiceConfig


def live_footer_keys() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, FooterKey))


async def test_tab_switches_leave_no_dead_footer_keys(tmp_path: Path) -> None:
    log = tmp_path / "service.log"
    log.write_text("INFO 11-29 10:00:00 [x.py:1] started\n")
    profile = Profile(name="footer", service=ServiceConfig(log_file=str(log)))
    app = ServedeckApp(profile, open_deck(profile))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause(0.5)
        for _ in range(10):  # each switch changes the footer's bindings: it recomposes
            for key in ("3", "4", "1"):
                await pilot.press(key)
                await pilot.pause(0.05)
        deadline = time.monotonic() + 10
        while True:
            shown = len(app.screen.query(FooterKey))
            alive = live_footer_keys()
            if alive <= 2 * shown or time.monotonic() > deadline:
                break
            await pilot.pause(0.2)
        assert shown > 0
        assert alive <= 2 * shown, f"{alive} footer keys alive, {shown} on screen"
        await pilot.press("q")
