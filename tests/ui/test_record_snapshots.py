"""Snapshots of the Timeline and of a replayed Deck over a fixed recording (UTC clock)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.record_synth import build_night
from tests.support.snapshot_apps.timeline_app import TimelineApp
from tui.app.replay_app import ReplayApp
from tui.screens.replay import ReplayScreen
from tui.screens.timeline import TimelineScreen

T0 = 1_800_000_000.0


@pytest.fixture
def utc_night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    db = tmp_path / "night.sqlite"
    build_night(db, T0)
    yield db
    monkeypatch.undo()
    time.tzset()


async def _settled(pilot, ready) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while not ready(pilot.app):
        assert time.monotonic() < deadline, "the screen did not settle"
        await pilot.pause(0.05)
    await pilot.pause(0.2)


def test_timeline_snapshot(utc_night: Path, snap_compare) -> None:  # type: ignore[no-untyped-def]
    def ready(app) -> bool:  # type: ignore[no-untyped-def]
        screen = app.screen
        return (
            isinstance(screen, TimelineScreen)
            and bool(screen.events)
            and "State at" in str(screen.query_one("#timeline-state").content)
        )

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _settled(pilot, ready)

    assert snap_compare(TimelineApp(utc_night), terminal_size=(120, 36), run_before=run_before)


@pytest.mark.parametrize("offset_s", [20.0, 55.0])
def test_replay_snapshot(utc_night: Path, offset_s: float, snap_compare) -> None:  # type: ignore[no-untyped-def]
    def ready(app) -> bool:  # type: ignore[no-untyped-def]
        return isinstance(app.screen, ReplayScreen) and app.screen.state is not None

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _settled(pilot, ready)

    app = ReplayApp(utc_night, T0 + offset_s, "box")
    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)
