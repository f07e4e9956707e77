"""The console's Tune view (U) on the demo's simulator: real processes, a real unit-like service.

U asks for the space, shows the Plan's preflight and starts nothing until confirmed; the
run's board shows each configuration's state; Escape asks, then cancels a load midway and
the unit is back as it was (the drop-in removed, the service started again), as SIGTERM
leaves it after `servedeck tune`. A read-only console refuses U and audits the refusal.
"""

from __future__ import annotations

import asyncio
import io
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from textual.widgets import Input, Static

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.audit import read_audit
from tui.core.config import demo_profile
from tui.screens.tune import TuneCancelScreen, TuneConfirmScreen, TuneScreen, TuneSpaceScreen
from tui.sim.deck import SimDeck
from tui.summary.recorded import recorded_history
from tui.tune.dropin import DROPIN_NAME, RestoreMarker, read_marker, write_marker
from widgets.tune_view import TuneView

SPACE = """
[tune]
objective = "single_stream"
budget_s = 300
deadline_s = 90
input_tokens = 64
output_tokens = 16

[[config]]
name = "first"
"--max-num-seqs" = 4
{first_env}

[[config]]
name = "tp6"
"--tensor-parallel-size" = 6
"""


async def until(pilot, predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _drawn(app: ServedeckApp) -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    for static in app.screen.query_one(TuneView).query(Static):
        content = static.content  # what the view drew: text, or the configurations' grid
        console.print(Text(content) if isinstance(content, str) else content)
    return console.export_text()


def _open_demo(read_only: bool = False) -> SimDeck:
    profile = replace(demo_profile(), read_only=read_only)
    slo = replace(profile.benchmark.slo, itl_p99_ms=0)  # one stall on two cores is no answer
    profile = replace(profile, benchmark=replace(profile.benchmark, slo=slo))
    deck = open_deck(profile, demo_load_s=2.0, demo_autostart=True, demo_wait_ready=True)
    assert isinstance(deck, SimDeck)
    return deck


async def _plan_and_confirm(pilot, app: ServedeckApp, space: Path, serving: bool = True) -> str:  # type: ignore[no-untyped-def]
    """U, the space's path typed, the preflight read, Run pressed; the preflight's text."""
    if serving:
        await until(pilot, lambda: app.ready, 60, "the demo to serve")
    await pilot.press("U")
    await until(pilot, lambda: isinstance(app.screen, TuneSpaceScreen), 10, "the space dialog")
    field = app.screen.query_one(Input)
    assert field.value.endswith("tune-demo.toml")  # no tune.toml beside the demo: the example
    field.value = str(space)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, TuneConfirmScreen), 30, "the preflight")
    preflight = str(app.screen.query_one("#tune-plan", Static).render())
    assert app.tune.board is None  # nothing starts before the confirmation
    await pilot.click("#confirm-yes")
    await until(pilot, lambda: isinstance(app.screen, TuneScreen), 10, "the Tune view")
    return preflight


@pytest.mark.timeout(300)
async def test_u_plans_confirms_runs_and_ranks_then_restores_the_unit(tmp_path: Path) -> None:
    space = tmp_path / "tune.toml"
    space.write_text(SPACE.format(first_env=""))
    deck = _open_demo()
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            preflight = await _plan_and_confirm(pilot, app, space)
            assert "first" in preflight and "tp6" in preflight and "skip" in preflight
            await until(
                pilot,
                lambda: app.tune.board is not None and app.tune.board.snapshot().finished,
                240,
                "the tune to finish",
            )
            await pilot.pause(0.6)
            text = _drawn(app)
            states = {c.name: c.state for c in app.tune.board.snapshot().configs}
            assert states == {"first": "done", "tp6": "skipped"}, text
            assert "1-stream" in text and "best: first" in text, text
            assert "unit restored: drop-in removed, service started as before" in text, text
            await pilot.press("escape")  # a finished tune just closes
            await until(pilot, lambda: not isinstance(app.screen, TuneScreen), 5, "closed")
            # as before the tune: serving, no drop-in (closing the console ends the demo's box)
            await until(pilot, lambda: deck.box.unit.state == "active", 30, "the unit active")
            assert not list(deck.box.dropin_dir.glob("*.conf")) and read_marker() is None
    finally:
        await deck.close()


@pytest.mark.timeout(300)
async def test_cancel_mid_load_asks_then_restores_the_unit_as_sigterm_does(
    tmp_path: Path,
) -> None:
    space = tmp_path / "tune.toml"
    space.write_text(SPACE.format(first_env='env = { SERVEDECK_SIM_LOAD_SLOWDOWN = "40" }'))
    deck = _open_demo()
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await _plan_and_confirm(pilot, app, space)
            board = app.tune.board
            assert board is not None

            def loading() -> bool:
                first = board.snapshot().configs[0]
                return first.state == "loading" and first.phase not in (None, "starting")

            await until(pilot, loading, 60, "the first configuration's load")
            await pilot.pause(0.6)
            assert "ETA" in _drawn(app)  # loading with its ETA (or "unknown", never a guess)
            dropin = next(deck.box.dropin_dir.glob("*.conf"))
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, TuneCancelScreen), 5, "the ask")
            await pilot.press("escape")  # the safe answer: the tune runs on
            await pilot.pause(0.3)
            assert app.tune.running and dropin.exists()
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, TuneCancelScreen), 5, "the ask")
            await pilot.click("#confirm-yes")
            await until(pilot, lambda: not app.tune.running, 90, "the cancel to restore")
            await pilot.pause(0.6)
            snapshot = board.snapshot()
            assert snapshot.finished and snapshot.configs[0].state == "cancelled"
            assert "unit restored: drop-in removed, service started as before" in snapshot.lines
            assert not dropin.exists() and read_marker() is None
            await until(pilot, lambda: deck.box.unit.state == "active", 30, "the unit active")
        records = list(read_audit())
        removed = [r for r in records if r["event"] == "tune.dropin" and r["what"] == "remove"]
        assert removed and removed[-1]["ok"] and removed[-1]["dropin"] == str(dropin), records
        at = records.index(removed[-1])
        assert any(
            r["event"] == "service.request" and r.get("action") == "start" for r in records[at:]
        ), records[at:]
    finally:
        await deck.close()


@pytest.mark.timeout(300)
async def test_the_view_undoes_a_crashed_tune_first_and_records_without_the_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A console that does not record (SERVEDECK_RECORD=0), on a host where an earlier tune
    died mid-run (its drop-in in place, the service stopped, the marker saying it ran):
    the view takes `servedeck tune`'s path, so the crashed tune is undone first (the
    service ends running, as before that tune) and the attempts and result are recorded."""
    monkeypatch.setenv("SERVEDECK_RECORD", "0")
    space = tmp_path / "tune.toml"
    space.write_text(SPACE.format(first_env=""))
    deck = _open_demo()
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await until(pilot, lambda: app.ready, 60, "the demo to serve")
            assert app.record.recording is not None and app.record.recording.recorder is None
            # the earlier tune's crash: its drop-in written, the service stopped, the marker left
            await asyncio.to_thread(deck.box.stop)
            await asyncio.to_thread(deck.box.unit.wait_for_state, "inactive", 30.0)
            left = deck.box.dropin_dir / DROPIN_NAME
            left.parent.mkdir(parents=True, exist_ok=True)
            left.write_text("[Service]\nExecStart=\nExecStart=vllm serve --max-num-seqs 2\n")
            marker = RestoreMarker("simulator", "demo", str(left), True, time.time())
            write_marker(marker)
            await _plan_and_confirm(pilot, app, space, serving=False)
            await until(
                pilot,
                lambda: app.tune.board is not None and app.tune.board.snapshot().finished,
                240,
                "the tune to finish",
            )
            lines = app.tune.board.snapshot().lines
            assert f"a tune left {left}: removing it" in lines, lines
            assert "unit restored: drop-in removed, service started as before" in lines, lines
            await until(pilot, lambda: deck.box.unit.state == "active", 30, "the unit active")
            assert not left.exists() and read_marker() is None
        history = recorded_history(deck.profile, "simulator")
        assert history is not None and history.tune is not None, history
        assert "best: first" in history.tune.text
        assert [a.outcome for a in history.attempts].count("served") >= 1, history.attempts
    finally:
        await deck.close()


async def test_read_only_console_refuses_the_tune_and_audits_it() -> None:
    deck = _open_demo(read_only=True)
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("U")
            await pilot.pause(0.3)
            app.tune.open()  # the palette's way in, past the hidden key
            await pilot.pause(0.3)
            assert not isinstance(app.screen, (TuneSpaceScreen, TuneScreen))
            notes = [n.message for n in app._notifications]
            assert "Read-only console: Tune (U) is refused." in notes, notes
            refused = [r for r in read_audit() if r["event"] == "console.refused"]
            assert [r["action"] for r in refused] == ["tune", "tune"], refused
        assert app.tune.board is None
    finally:
        await deck.close()
