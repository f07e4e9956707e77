"""`servedeck replay`'s app: only the replay screen over a recording file; no host is contacted."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from tui.screens.replay import ReplayScreen


class ReplayApp(App[int]):
    """`servedeck replay`: only the replay screen, over a recording file; no host is contacted."""

    TITLE = "servedeck replay"

    def __init__(self, db_path: Path, at_s: float, host_label: str = "") -> None:
        super().__init__()
        self.db_path, self.at_s, self.host_label = db_path, at_s, host_label

    def on_mount(self) -> None:
        self.push_screen(
            ReplayScreen(self.db_path, self.at_s, self.host_label), lambda _: self.exit(0)
        )
