"""Quitting lets every worker finish, so the event loop never closes on a half-started command.

On CPython 3.11, closing the event loop while asyncio is still connecting a new
subprocess's pipes makes the loop wait for that process forever (gh-125502): the
console would hang on quit. The console overview re-reads host vitals with a real
`cat` every 10 ms here, so workers are starting commands at any instant the
console quits; after each quit no worker may still be running or about to start.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path

from tui.app import ServedeckApp
from tui.config import load_profile_file
from tui.deck import Deck
from tui.hosts.base import CommandResult
from tui.hosts.local import LocalHost

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 12


class QuitWatchingHost(LocalHost):
    """This machine, noting commands that start after the console began to quit."""

    def __init__(self) -> None:
        super().__init__()
        self.app: ServedeckApp | None = None
        self.started = 0
        self.started_while_quitting: list[list[str]] = []

    async def run(
        self, argv: Sequence[str], timeout_s: float = 30.0, stdin_text: str | None = None
    ) -> CommandResult:
        self.started += 1
        if self.app is not None and self.app.quitting:
            self.started_while_quitting.append(list(argv))
        return await super().run(argv, timeout_s=timeout_s, stdin_text=stdin_text)


def _unfinished_workers() -> list[asyncio.Task[object]]:
    current = asyncio.current_task()
    return [
        task
        for task in asyncio.all_tasks()
        if task is not current and not task.done() and "Worker._run" in repr(task.get_coro())
    ]


async def test_quit_leaves_no_worker_running_even_mid_command() -> None:
    profile = load_profile_file(REPO / "profiles" / "local-vllm.toml")
    rng = random.Random(7)
    total_started = 0
    for round_index in range(ROUNDS):
        host = QuitWatchingHost()
        app = ServedeckApp(profile, Deck(profile, host), overview_interval_s=0.01)
        host.app = app
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(50):
                await pilot.pause(0.02)
                if host.started >= 3:
                    break
            await asyncio.sleep(rng.uniform(0.0, 0.02))  # quit at a different instant each round
        await asyncio.sleep(0)  # work asked for while quitting was cancelled before its first step
        left = _unfinished_workers()
        assert not left, f"round {round_index}: workers still running after quit: {left}"
        assert not host.started_while_quitting, (
            f"round {round_index}: commands started after quitting began: "
            f"{host.started_while_quitting}"
        )
        total_started += host.started
    assert total_started >= 3 * ROUNDS  # the overview really was polling when each quit came
