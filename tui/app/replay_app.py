"""`servedeck replay`'s app: only the replay screen over a recording file; no host is contacted."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from textual.app import App

from tui.core.keymap import COMMANDS, REPLAY_SCOPES, effective_keys
from tui.screens.help import HelpScreen
from tui.screens.replay import ReplayScreen


class ReplayApp(App[int]):
    """`servedeck replay`: only the replay screen, over a recording file; no host is contacted."""

    TITLE = "servedeck replay"

    def __init__(
        self,
        db_path: Path,
        at_s: float,
        host_label: str = "",
        keys: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.db_path, self.at_s, self.host_label = db_path, at_s, host_label
        self.keys = dict(keys or {})  # the profile's [keys] remaps, by binding id

    def on_mount(self) -> None:
        if self.keys:
            self.set_keymap(self.keys)
        self.push_screen(
            ReplayScreen(self.db_path, self.at_s, self.host_label), lambda _: self.exit(0)
        )

    def action_help(self) -> None:
        """`?` (bound by the replay screen): the replay's keys, as remapped."""
        self.push_screen(
            HelpScreen(COMMANDS, effective_keys(self.keys), here=("replay",), scopes=REPLAY_SCOPES)
        )
