"""Replay over a recording: the state at chosen instants, seeking in a week, and the CLI."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.support.record_synth import build_night, cached_week
from tui.app.replay_app import ReplayApp
from tui.record.query import RecordingReader
from tui.screens.replay import ReplayScreen
from widgets.service_line import ServiceLine

T0 = 1_800_000_000.0
GIB = 1024**3


@pytest.fixture
def night(tmp_path: Path) -> Path:
    db = tmp_path / "night.sqlite"
    build_night(db, T0)
    return db


async def _until(pilot: object, predicate: Callable[[], object], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("offset_s", "used_gib", "unit_text", "metrics"),
    [
        (5.0, 6, "activating (start)", "no serving metrics"),
        (20.0, 21, "activating (start)", "no serving metrics"),
        (35.0, 36, "active (running)", "no serving metrics"),
        (45.0, 46, "active (running)", "running 5; waiting 2"),
        (55.0, 56, "failed (failed)", "running 5; waiting 2"),
    ],
)
async def test_replay_shows_the_recorded_state_at_an_instant(
    night: Path, offset_s: float, used_gib: int, unit_text: str, metrics: str
) -> None:
    app = ReplayApp(night, T0 + offset_s, "box")
    async with app.run_test(size=(140, 40)) as pilot:
        await _until(
            pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.state is not None
        )
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.state is not None
        sample = screen.state.gpu.samples[0]
        assert sample.memory_used_bytes == used_gib * GIB
        assert unit_text in str(screen.query_one(ServiceLine).content)
        assert metrics in str(screen.query_one("#replay-metrics", Static).content)
        assert str(screen.query_one("#replay-banner", Static).content).startswith("REPLAY")


async def test_replay_steps_and_jumps_between_events(night: Path) -> None:
    app = ReplayApp(night, T0 + 10, "box")
    async with app.run_test(size=(140, 40)) as pilot:
        await _until(
            pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.state is not None
        )
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        await pilot.press("right_square_bracket")
        await _until(pilot, lambda: screen.at_s == T0 + 11)
        await pilot.press("right_curly_bracket")  # the unit became active at +30
        await _until(pilot, lambda: screen.at_s == T0 + 30)
        await pilot.press("right_curly_bracket")
        await _until(pilot, lambda: screen.at_s == T0 + 50)
        await pilot.press("left_curly_bracket")
        await _until(pilot, lambda: screen.at_s == T0 + 30)
        await pilot.press("escape")
        await _until(pilot, lambda: not app.is_running)


def test_seek_in_a_week_long_recording_is_fast(tmp_path: Path) -> None:
    db = tmp_path / "week.sqlite"
    now = T0
    cached_week(db, now)
    with RecordingReader(db) as reader:
        worst = 0.0
        for hours_back in (0.01, 3, 23.9, 30, 71, 100, 150, 167):
            started = time.perf_counter()
            state = reader.state_at(now - hours_back * 3600)
            series = reader.gpu_series(now - hours_back * 3600 - 300, now - hours_back * 3600)
            worst = max(worst, time.perf_counter() - started)
            assert state.gpu.available and len(state.gpu.samples) == 8 and series
    assert worst <= 1.0, f"worst seek {worst:.3f} s"


def test_replay_cli_errors_are_one_line(tmp_path: Path, night: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tui", "replay", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    outside = run("--db", str(night), "--at", "2020-01-01 00:00")
    assert outside.returncode != 0 and "is outside the recording" in outside.stderr
    missing = run("--db", str(tmp_path / "none.sqlite"), "--at", "03:12")
    assert missing.returncode != 0 and "no recording here" in missing.stderr
    assert "Traceback" not in outside.stderr + missing.stderr
