"""An idle console starts no process per refresh (issue: no interpreter per refresh).

The console runs in this process (Pilot) with its real sources; every process it starts,
through asyncio or subprocess, is counted by a wrapper that still starts it (nothing is
replaced). After a warm-up that lets the one-time starts happen (the simulator, the
kernel-log follower, a GPU stream), the console must start nothing more while it sits
idle through several refreshes of every pane, however slow or fast this machine is:
the count does not depend on timing, only on whether a refresh spawns.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core import paths
from tui.core.config import GpuConfig, Profile, demo_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost

WARM_UP_S = 12.0
IDLE_S = 25.0  # > 2 process listings (every ~10 s) and many GPU/metric refreshes


class SpawnLog:
    def __init__(self) -> None:
        self.argvs: list[tuple[str, ...]] = []

    def note(self, argv: Any) -> None:
        if isinstance(argv, (str, bytes, Path)):
            self.argvs.append((str(argv),))
        else:
            self.argvs.append(tuple(str(part) for part in argv))


@pytest.fixture
def spawns(monkeypatch: pytest.MonkeyPatch) -> Iterator[SpawnLog]:
    log = SpawnLog()
    real_exec = asyncio.create_subprocess_exec
    real_shell = asyncio.create_subprocess_shell
    real_popen_init = subprocess.Popen.__init__

    async def counted_exec(program: Any, *args: Any, **kwargs: Any) -> Any:
        log.note((program, *args))
        return await real_exec(program, *args, **kwargs)

    async def counted_shell(command: Any, **kwargs: Any) -> Any:
        log.note(("/bin/sh", "-c", command))
        return await real_shell(command, **kwargs)

    def counted_popen(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        log.note(args)
        real_popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", counted_exec)
    monkeypatch.setattr(asyncio, "create_subprocess_shell", counted_shell)
    monkeypatch.setattr(subprocess.Popen, "__init__", counted_popen)
    yield log


async def _idle_spawns(app: ServedeckApp, log: SpawnLog) -> list[tuple[str, ...]]:
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(WARM_UP_S)
        before = len(log.argvs)
        for key in ("1", "2", "3", "1"):  # every pane drawn and refreshed while idle
            await pilot.press(key)
            await pilot.pause(IDLE_S / 4)
        return log.argvs[before:]


async def test_idle_local_console_with_no_service_spawns_nothing(spawns: SpawnLog) -> None:
    profile = replace(Profile(name="local"), gpu=GpuConfig(refresh_s=1.0))
    app = ServedeckApp(profile, Deck(profile, LocalHost()))
    started = await _idle_spawns(app, spawns)
    assert started == [], f"an idle console started {len(started)} processes: {started[:5]}"


async def test_idle_demo_console_serving_spawns_nothing(
    spawns: SpawnLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    deck = open_deck(demo_profile(), demo_load_s=2.0, demo_autostart=True)
    app = ServedeckApp(deck.profile, deck)
    with paths.demo_records(True):
        started = await _idle_spawns(app, spawns)
    assert started == [], f"an idle demo console started {len(started)} processes: {started[:5]}"
