"""The Timeline at 80 and 120 columns: What keeps the width, a log path is its file name, the
title stays whole, End selects the newest event and `?` lists the Timeline's own keys."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Static

from tests.support.record_synth import build_night
from tests.support.screen_text import screen_lines, screen_text
from tui.core.keymap import COMMANDS
from tui.offered import help_scopes
from tui.screens.help import HelpScreen
from tui.screens.timeline import TimelineScreen
from widgets.timeline_view import TimelineTable

T0 = 1_800_000_000.0
LOG = "/var/tmp/servedeck-demo-3f9a2c71/box/logs/server.log"
STATUS = (
    "recording to /root/.local/share/servedeck/recordings/demo-box.sqlite (812 rows, 9 commits)"
)


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    db = tmp_path / "night.sqlite"
    build_night(db, T0)
    with sqlite3.connect(db) as connection:
        connection.executemany(
            "INSERT INTO events (ts_ms, kind, source, text) VALUES (?, 'log', ?, ?)",
            [
                (int((T0 + 60 + k) * 1000), LOG, f"WARNING worker {k} slow to answer the scheduler")
                for k in range(40)
            ],
        )
    yield db
    monkeypatch.undo()
    time.tzset()


class TimelineApp(App[None]):
    def __init__(self, db: Path) -> None:
        super().__init__()
        self.db = db

    def on_mount(self) -> None:
        self.push_screen(TimelineScreen(self.db, status=STATUS))


async def _opened(pilot, app: TimelineApp) -> TimelineScreen:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while not (isinstance(app.screen, TimelineScreen) and app.screen.events):
        assert time.monotonic() < deadline, "the Timeline did not read its events"
        await pilot.pause(0.05)
    await pilot.pause(0.1)
    return app.screen


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_timeline_fits_and_end_selects_the_newest(night: Path, size: tuple[int, int]) -> None:
    app = TimelineApp(night)
    async with app.run_test(size=size) as pilot:
        screen = await _opened(pilot, app)
        lines = screen_lines(app)
        assert lines[0].strip().endswith("]") and "demo-box.sqlite" in lines[0], lines[0]
        if size[0] >= 120:
            assert lines[0].strip().endswith("(812 rows, 9 commits)]"), lines[0]
        assert lines[0].lstrip().startswith(f"Timeline: {len(screen.events)} event(s)")
        row = next(line for line in lines if "server.log" in line)
        assert "/var/tmp" not in row
        assert "WARNING worker" in row and "slow to" in row, row  # What has the room
        assert all(len(line) <= size[0] for line in lines)

        table = screen.query_one(TimelineTable)
        await pilot.press("home")
        assert table.cursor_row == 0
        await pilot.press("end")
        assert table.cursor_row == len(screen.events) - 1
        assert table.scroll_x == 0


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_help_in_the_timeline_lists_its_keys(night: Path, size: tuple[int, int]) -> None:
    """`?` over the Timeline (the console asks help_scopes with the screen's KEY_SCOPE) lists
    the Timeline's keys, not the overview's `r`; a help line's `[benchmark.slo]` is text."""
    app = TimelineApp(night)
    async with app.run_test(size=size) as pilot:
        screen = await _opened(pilot, app)
        keys = {command.binding_id: command.key_display or command.key for command in COMMANDS}
        here = help_scopes("deck", getattr(screen, "KEY_SCOPE", None))
        await app.push_screen(HelpScreen(COMMANDS, keys, here=here))
        await pilot.pause()
        text = screen_text(app)
        assert "Keys that work here" in text
        assert "Read the recording again (newest events)" in text
        assert "Replay the Deck at the selected event" in text
        capacity_lines = 0
        for static in app.screen.query(Static):
            console = Console(width=200, record=True)
            console.print(static.content)
            drawn = console.export_text()
            assert "Re-read the host overview" not in drawn  # r reloads here
            assert "SLO ()" not in drawn
            if "Find how many users" in drawn:
                capacity_lines += 1
                assert "meet the SLO ([benchmark.slo])" in drawn
        assert capacity_lines == 1
