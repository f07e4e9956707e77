"""The console records what it sees; the Timeline (6 / T) lists it; g replays the Deck there.

The console runs on a real simulator box (its processes, HTTP API and log), with Pilot.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from textual.widgets import Static

from tests.support.sim_fixtures import FAST_OPTIONS
from tests.support.summary_helpers import demo_deck
from tui.app import ServedeckApp
from tui.app.console_record import recorded_lines
from tui.core.alert_rules import AlertingConfig, AlertRule
from tui.core.config import demo_profile
from tui.logs.line import LogLine
from tui.record.query import RecordingReader
from tui.record.where import recording_path
from tui.record.writer import Recorder
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.replay import ReplayScreen
from tui.screens.timeline import TimelineScreen
from tui.sim.box import SimBox
from widgets.timeline_view import RecordedStateView, TimelineTable

TIMEOUT_S = 120.0
# Fires as soon as the demo's GPUs hold memory: an alert to see on screen and in the Timeline.
LOADED = AlertRule("loaded", "gpu.memory_used_pct", ">=", 5, 0, "warning", 1, "GPU memory in use")


async def _until(
    pilot: object, predicate: Callable[[], object], what: str, timeout_s: float = TIMEOUT_S
) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)  # type: ignore[attr-defined]


def _recorded(app: ServedeckApp, prefix: str) -> bool:
    recording = app.record.recording
    if recording is None or not recording.db_path.exists():
        return False
    with RecordingReader(recording.db_path) as reader:
        return any(event.text.startswith(prefix) for event in reader.events())


async def test_timeline_filters_shows_state_and_replays_without_actions(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory(FAST_OPTIONS)
    profile = replace(demo_profile(), alerting=AlertingConfig((LOADED,), use_defaults=False))
    deck = demo_deck(box, profile)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(140, 44)) as pilot:
        # The recorder starts just after the first frame is painted.
        await _until(pilot, lambda: app.record.recording is not None, "the recorder started")
        assert app.record.recording is not None and app.record.recording.recording, (
            app.record.recording.status
        )
        box.start()
        await _until(pilot, lambda: _recorded(app, "ready: "), "the load recorded")
        await _until(
            pilot, lambda: _recorded(app, "WARNING GPU memory in use"), "the alert recorded"
        )
        notes = [f"{note.title}: {note.message}" for note in app._notifications]
        assert any(note.startswith("Alert: WARNING GPU memory in use") for note in notes), notes

        await pilot.press("T")
        await _until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the Timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        await _until(
            pilot, lambda: any(e.text.startswith("ready: ") for e in screen.events), "events"
        )
        kinds = {event.kind for event in screen.events}
        assert {"engine", "service", "alert"} <= kinds

        await pilot.press("f", "f")  # all -> gpu -> engine
        await _until(pilot, lambda: screen.kind == "engine" and screen.events and all(
            e.kind == "engine" for e in screen.events), f"engine filter {screen.kind} {app.focused}", 10)  # fmt: skip
        await pilot.press("f", "f", "f", "f", "f")  # ... -> alert -> all
        assert screen.kind is None
        await pilot.press("slash")
        await pilot.press(*"ready", "enter")
        await _until(pilot, lambda: screen.search == "ready" and len(screen.events) >= 1 and all(
            "ready" in e.text for e in screen.events), "the search")  # fmt: skip

        table = screen.query_one(TimelineTable)
        table.focus()
        await pilot.press("end")
        view = screen.query_one(RecordedStateView)
        await _until(pilot, lambda: "State at" in str(view.content), "the state at the event")
        assert "GPU 0" in str(view.content)

        await pilot.press("g")
        await _until(pilot, lambda: isinstance(app.screen, ReplayScreen), "the replay")
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        await _until(pilot, lambda: replay.state is not None, "the first seek")
        banner = str(replay.query_one("#replay-banner", Static).content)
        assert banner.startswith("REPLAY")
        assert replay.seek_s is not None and replay.seek_s < 1.0
        at = replay.at_s
        await pilot.press("X")  # stop the service: refused in replay
        await pilot.pause(0.3)
        assert not isinstance(app.screen, ConfirmActionScreen)
        await pilot.press("right_square_bracket")
        await _until(pilot, lambda: abs(replay.at_s - (at + 1.0)) < 1e-6, "a step")
        await pilot.press("left_curly_bracket")  # back to the last event before now
        await _until(pilot, lambda: replay.at_s < at + 1.0, "the previous event", 20)
        previous = replay.at_s
        await pilot.press("left_curly_bracket")
        await _until(pilot, lambda: replay.at_s < previous, "the one before", 20)
        await pilot.press("right_curly_bracket")
        await _until(pilot, lambda: replay.at_s == previous, "the next event", 20)
        await pilot.press("escape")
        await _until(pilot, lambda: isinstance(app.screen, TimelineScreen), "back to the Timeline")
        await pilot.press("escape")
        await pilot.press("X")  # out of replay the key works again (stop: it asks first)
        await _until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), "the confirmation")
        await pilot.press("escape")


async def test_console_reads_when_another_recorder_holds_the_file(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory(FAST_OPTIONS)
    deck = demo_deck(box)
    holder = Recorder(recording_path(deck.profile), what="servedeck record -p demo").start()
    try:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=(120, 36)) as pilot:
            await _until(pilot, lambda: app.record.recording is not None, "the recorder started")
            assert app.record.recording is not None and not app.record.recording.recording
            assert "already being recorded by pid" in app.record.recording.status
            assert "servedeck record -p demo" in app.record.recording.status
            await pilot.press("6")
            await _until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the Timeline")
    finally:
        holder.close()


def test_the_log_backlog_shown_at_start_is_not_recorded_again() -> None:
    now_s = time.time()
    old = "WARNING 01-01 00:00:00 [x.py:1] from last year"
    backlog = [
        LogLine(old, now_s, level="WARNING"),
        LogLine("WARNING no clock", now_s, level="WARNING"),
    ]
    journal = LogLine("WARNING journal line", now_s, cursor="s=1", level="WARNING")
    kept = recorded_lines([*backlog, journal], now_s, now_s)
    assert [line.text for line, _ in kept] == ["WARNING journal line"]
    later = [LogLine("WARNING no clock", now_s, level="WARNING")]  # later: lines are new
    assert [line.text for line, _ in recorded_lines(later, now_s - 10, now_s)] == [
        "WARNING no clock"
    ]
