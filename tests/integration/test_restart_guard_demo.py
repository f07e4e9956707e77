"""The guard, status/doctor's leftovers line, on the simulator's real orphaned workers.

The simulator's stop leaves two orphaned worker processes (real processes,
reparented) that keep their simulated GPU memory, as vLLM's do.
"""

from __future__ import annotations

import time

import pytest

from tui.compose import open_deck
from tui.core.config import demo_profile
from tui.ops.restart_guard import guarded_action, leftovers_checks, leftovers_note
from tui.serving.unit.restart_guard import GuardRefused
from tui.sim.procs import is_alive


@pytest.mark.timeout(240)
async def test_stop_with_orphans_then_start_is_refused_and_status_says_why() -> None:
    profile = demo_profile()
    deck = open_deck(
        profile, demo_load_s=2.0, demo_autostart=True, demo_wait_ready=True, demo_orphans_on_stop=2
    )
    box = deck.box
    assert box is not None
    try:
        assert await leftovers_note(deck) is None  # running: nothing is a leftover
        outcome = await guarded_action(deck, "stop", confirmed=True)  # stop is never guarded
        assert outcome.ok
        deadline = time.monotonic() + 30
        while len(box.live_processes()) != 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        orphans = {pid for pid, _role in box.live_processes()}
        assert len(orphans) == 2

        note = await leftovers_note(deck)
        assert note is not None and note.startswith("service inactive but ")
        held = float(note.split("but ")[1].split(" GiB")[0])
        assert held > 1.0, note
        for pid in orphans:
            assert str(pid) in note
        (check,) = await leftovers_checks(profile, deck)
        assert check.verdict == "warn" and "servedeck kill --leftovers" in check.detail

        with pytest.raises(GuardRefused) as refused:
            await guarded_action(deck, "start", confirmed=True)
        for pid in orphans:
            assert f"pid {pid} (" in str(refused.value)
        assert all(is_alive(pid) for pid in orphans)  # refused, nothing touched
        assert not (await deck.service().state()).is_active  # type: ignore[union-attr]
    finally:
        await deck.close()
