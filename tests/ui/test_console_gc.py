"""While a console runs, young garbage collections wait for GC_YOUNG_OBJECTS allocations
(a log flood's lines are mostly freed before one walks them); unmounting restores the
thresholds it found, and the pane keeps its buffered lines untracked by the collector."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from tui.app import ServedeckApp
from tui.app.console_lifecycle import GC_YOUNG_OBJECTS
from tui.compose import open_deck
from tui.core.config import Profile, ServiceConfig
from widgets.log_pane import LogPane


async def test_thresholds_raised_while_running_and_restored_after(tmp_path: Path) -> None:
    before = gc.get_threshold()
    assert before[0] < GC_YOUNG_OBJECTS
    log = tmp_path / "service.log"
    log.write_text("".join(f"INFO 11-29 10:00:00 [x.py:1] line {i}\n" for i in range(300)))
    profile = Profile(name="gc", service=ServiceConfig(log_file=str(log)))
    app = ServedeckApp(profile, open_deck(profile))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(LogPane)
        deadline = time.monotonic() + 60  # a loaded machine: generous
        while len(pane.buffer) < 300 and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert gc.get_threshold() == (GC_YOUNG_OBJECTS, *before[1:])
        assert pane.buffer[-1].text.endswith("line 299")
        gc.collect()
        assert not any(gc.is_tracked(entry) for entry in pane._entries)
        await pilot.press("q")
    assert gc.get_threshold() == before
