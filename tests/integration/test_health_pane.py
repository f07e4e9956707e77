"""The console's Health pane on the simulated box: key 7 shows the doctor and GPU health."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import demo_profile
from widgets.health_view import HealthView


async def _until(pilot, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


async def test_health_pane_shows_faults_and_xids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVEDECK_SIM_INTERCONNECT", "acs=2,bar1=3")
    monkeypatch.setenv("SERVEDECK_SIM_XID", "79@5,not-an-xid")
    deck = open_deck(demo_profile())
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("7")
        body = app.query_one("#health-body", Static)
        # GPU health shows from the first GPU sample on; the doctor's findings when it ends.
        await _until(pilot, lambda: "CRIT acs" in str(body.render()), 60, "the health report")
        text = str(body.render())
        assert "CRIT acs" in text and "0000:40:01.1 (above GPU2)" in text
        assert "WARN bar1" in text and "GPU3" in text
        assert "XID 79 GPU has fallen off the bus" in text and "reboot the node" in text
        assert app.query_one(HealthView).display
        await pilot.press("q")


@pytest.mark.parametrize(
    ("autostart", "expected"),
    [
        (False, "Probe refused: the simulator's GPUs cannot run the probe"),
        (True, "Probe refused: the service is active (vllm-kimi-k25-int4.service"),
    ],
)
async def test_probe_key_refuses_and_says_why(autostart: bool, expected: str) -> None:
    deck = open_deck(demo_profile(), demo_autostart=autostart, demo_load_s=5.0)
    app = ServedeckApp(deck.profile, deck)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("7")
        line = app.query_one("#health-probe", Static)
        await pilot.press("p")
        await _until(pilot, lambda: "refused" in str(line.render()), 60, "the refusal")
        assert str(line.render()).startswith(expected)
        assert not isinstance(app.screen, ModalScreen)  # nothing was offered to confirm
        await pilot.press("q")
