"""A console on this machine whose host notes every command it starts (for poll tests)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from tui.app import ServedeckApp
from tui.config import load_profile_file
from tui.deck import Deck
from tui.hosts.base import CommandResult
from tui.hosts.local import LocalHost

REPO = Path(__file__).resolve().parents[2]


class RecordingLocalHost(LocalHost):
    """This machine, noting each command, when it started, and which started while quitting."""

    def __init__(self) -> None:
        super().__init__()
        self.app: ServedeckApp | None = None
        self.commands: list[list[str]] = []
        self.started_s: list[float] = []
        self.started_while_quitting: list[list[str]] = []

    async def run(
        self, argv: Sequence[str], timeout_s: float = 30.0, stdin_text: str | None = None
    ) -> CommandResult:
        self.commands.append(list(argv))
        self.started_s.append(time.monotonic())
        if self.app is not None and self.app.quitting:
            self.started_while_quitting.append(list(argv))
        return await super().run(argv, timeout_s=timeout_s, stdin_text=stdin_text)

    def count(self, head: Sequence[str], since_s: float = 0.0) -> int:
        """Commands that began with `head` and started at or after since_s (monotonic)."""
        return sum(
            1
            for argv, at_s in zip(self.commands, self.started_s, strict=True)
            if argv[: len(head)] == list(head) and at_s >= since_s
        )


def local_console(overview_interval_s: float) -> tuple[ServedeckApp, RecordingLocalHost]:
    """The console for profiles/local-vllm.toml on this machine, and its recording host."""
    profile = load_profile_file(REPO / "profiles" / "local-vllm.toml")
    host = RecordingLocalHost()
    app = ServedeckApp(profile, Deck(profile, host), overview_interval_s=overview_interval_s)
    host.app = app
    return app, host
