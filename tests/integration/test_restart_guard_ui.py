"""S and R behind the restart guard, in the console on the simulator (Textual Pilot).

The simulator's stop leaves two real orphaned workers holding (simulated) GPU
memory; S then opens the guard's refusal naming their PIDs and GiB instead of the
confirm dialog, K from it opens the kill dialog, and once they are gone S asks
for confirmation as before.
"""

from __future__ import annotations

import pytest

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import demo_profile
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.guard_refused import GuardRefusedScreen
from tui.screens.kill_confirm import KillConfirmScreen
from tui.serving.load.history import earlier_loads
from tui.sim.procs import is_alive


async def until(pilot, predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


@pytest.mark.timeout(240)
async def test_start_over_leftovers_is_refused_and_offers_k() -> None:
    deck = open_deck(demo_profile(), demo_load_s=3.0, demo_orphans_on_stop=2)
    box = deck.box
    assert box is not None
    app = ServedeckApp(deck.profile, deck)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.unit_state is not None, 30, "the unit's state")
            await pilot.press("S")
            await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 20, "ask")
            await pilot.press("shift+tab", "enter")
            await until(pilot, lambda: app.ready, 120, "ready")
            # After ready: the one-line diagnosis, and the load kept for the next prediction.
            await until(
                pilot,
                lambda: any(n.title == "Load" for n in app._notifications),
                60,
                "the load diagnosis",
            )
            (note,) = [n for n in app._notifications if n.title == "Load"]
            assert note.message.startswith("load ") and "next load" in note.message
            (record,) = earlier_loads(deck.host_label, deck.profile.model.name)
            assert record["wall_s"] and record["predicted_next_load_s"] is not None
            await pilot.press("X")
            await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 20, "ask")
            await pilot.press("shift+tab", "enter")
            await until(
                pilot,
                lambda: app.unit_state is not None and app.unit_state.active_state == "inactive",
                30,
                "the stop",
            )
            await until(pilot, lambda: len(box.live_processes()) == 2, 15, "two orphans")
            orphans = {pid for pid, _role in box.live_processes()}

            await pilot.press("S")
            await until(pilot, lambda: isinstance(app.screen, GuardRefusedScreen), 30, "refusal")
            refusal = app.screen
            assert isinstance(refusal, GuardRefusedScreen)
            assert set(refusal.verdict.pids) == orphans
            assert refusal.verdict.blocked and refusal.verdict.held_bytes > 0
            text = "\n".join(refusal.verdict.process_lines())
            for pid in orphans:
                assert f"pid {pid} (" in text and " GiB" in text
            await pilot.press("K")
            await until(pilot, lambda: isinstance(app.screen, KillConfirmScreen), 30, "kill modal")
            modal = app.screen
            assert isinstance(modal, KillConfirmScreen)
            assert {proc.pid for proc in modal.targets} == orphans
            await until(pilot, lambda: modal.focused is not None, 10, "focus")
            await pilot.press("shift+tab", "enter")
            await until(pilot, lambda: not any(is_alive(p) for p in orphans), 30, "orphans ended")

            await pilot.press("S")
            await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 30, "ask")
            await pilot.press("escape")
    finally:
        await deck.close()
