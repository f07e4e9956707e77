"""A small app showing the Timeline screen over a recording file, for snapshots."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from tui.screens.timeline import TimelineScreen


class TimelineApp(App[None]):
    def __init__(self, db: Path) -> None:
        super().__init__()
        self.db = db

    def on_mount(self) -> None:
        self.push_screen(TimelineScreen(self.db, status="recording to night.sqlite"))
