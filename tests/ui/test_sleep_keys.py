"""Z and W (vLLM's sleep mode) on the Deck: offered only with sleep mode, confirmed, audited.

On the simulator (real processes, a real HTTP server with --enable-sleep-mode), at 80x24.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from tests.ui.test_offered_keys import footer_keys, until
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core import paths
from tui.core.config import demo_profile
from tui.deck import Deck
from tui.screens.confirm_action import ConfirmActionScreen
from widgets.service_line import ServiceLine

SIZE = (80, 24)


@contextlib.contextmanager
def sleepy_deck(read_only: bool = False, sleep_mode: bool = True) -> Iterator[Deck]:
    deck = open_deck(
        demo_profile(read_only=read_only),
        demo_load_s=2.0,
        demo_autostart=True,
        demo_server_args=("--enable-sleep-mode",) if sleep_mode else (),
    )
    try:
        yield deck
    finally:
        deck.box.close()  # type: ignore[attr-defined]  # the demo's Deck is a SimDeck


def _audit() -> list[dict]:
    path = paths.audit_log_path()
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_z_sleeps_after_asking_and_w_wakes() -> None:
    with sleepy_deck() as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.ready and app.sleep.asleep is False, 60, "ready, awake")
            assert app.check_action("sleep_mode", ("sleep",))
            assert not app.check_action("sleep_mode", ("wake",))
            await pilot.press("Z")
            await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 10, "ask")
            assert "/sleep?level=1" in str(app.screen.action.command_line)  # type: ignore[attr-defined]
            await pilot.click("#confirm-yes")
            await until(pilot, lambda: app.serving.asleep, 30, "asleep")
            assert not app.ready
            line = str(app.query_one(ServiceLine).render())
            assert "asleep (level 1)" in line and "ready" not in line, line
            await pilot.pause(0.2)
            assert "W" in footer_keys(app)
            assert not app.check_action("sleep_mode", ("sleep",))
            await pilot.press("W")
            await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 10, "ask")
            await pilot.click("#confirm-yes")
            await until(pilot, lambda: app.ready and not app.serving.asleep, 30, "awake and ready")
            events = [(r["event"], r["action"]) for r in _audit() if r["event"].startswith("sleep")]
            assert events == [
                ("sleep.request", "sleep"),
                ("sleep.outcome", "sleep"),
                ("sleep.request", "wake"),
                ("sleep.outcome", "wake"),
            ]


async def test_no_sleep_mode_offers_neither_key() -> None:
    with sleepy_deck(sleep_mode=False) as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.ready, 60, "ready")
            assert app.sleep.asleep is None
            assert not app.check_action("sleep_mode", ("sleep",))
            await pilot.press("Z")
            await pilot.pause(0.3)
            assert not isinstance(app.screen, ConfirmActionScreen)


async def test_read_only_refuses_z_audited() -> None:
    with sleepy_deck(read_only=True) as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.ready and app.sleep.asleep is False, 60, "ready, awake")
            assert not app.check_action("sleep_mode", ("sleep",))
            await pilot.press("Z")
            await pilot.pause(0.3)
            assert not isinstance(app.screen, ConfirmActionScreen)
            refused = [r for r in _audit() if r["event"] == "console.refused"]
            assert [(r["pressed"], r["action"]) for r in refused] == [("Z", "sleep_mode('sleep')")]
            assert not [r for r in _audit() if r["event"].startswith("sleep.")]
