"""The console shell: header, overview, help, palette, keys, sizes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.canned_host import CannedHost, canned_deck
from tests.support.waiting import pilot_wait
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import load_profile_file
from tui.core.errors import HostError
from tui.screens.help import HelpScreen
from widgets.header_bar import HeaderBar

REPO = Path(__file__).resolve().parents[2]
KIMI = load_profile_file(REPO / "profiles" / "kimi-k25-int4-lxc.toml")


async def test_overview_of_the_local_machine_appears() -> None:
    profile = load_profile_file(REPO / "profiles" / "local-vllm.toml")
    app = ServedeckApp(profile, open_deck(profile))
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(50):
            await pilot.pause(0.1)
            if app.query_one(HeaderBar).connection_state == "connected":
                break
        header = app.query_one(HeaderBar)
        assert header.connection_state == "connected"
        assert header.profile_name == "local-vllm"
        import socket

        assert header.connection_detail == socket.gethostname()


async def header_reads(pilot, app: ServedeckApp, state: str) -> HeaderBar:  # type: ignore[no-untyped-def]
    """The header, once its connection state reads `state`."""
    header = app.query_one(HeaderBar)
    await pilot_wait(
        pilot,
        lambda: header.connection_state == state,
        lambda: f"{state}, still {header.connection_state!r}",
        timeout_s=30.0,
    )
    return header


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_shell_works_at_small_and_large_sizes(size: tuple[int, int]) -> None:
    app = ServedeckApp(KIMI, canned_deck(KIMI))
    async with app.run_test(size=size) as pilot:
        header = app.query_one(HeaderBar)
        # The sources start after the first frame: wait for the connection, not a fixed time.
        await pilot_wait(
            pilot,
            lambda: header.connection_state == "connected",
            lambda: f"connected, still {header.connection_state!r}",
            timeout_s=30.0,
        )
        assert header.route == "root@10.10.0.21 via root@pve.lab.example"
        assert header.region.width == size[0]
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
    assert app.return_code in (0, None)


async def test_unreachable_host_is_one_line_in_header_and_pane() -> None:
    class Down(CannedHost):
        async def run(self, argv, timeout_s=30.0, stdin_text=None):  # type: ignore[no-untyped-def]
            raise HostError("root@10.10.0.21", "connection refused")

    app = ServedeckApp(KIMI, canned_deck(KIMI, Down()))
    async with app.run_test(size=(80, 24)) as pilot:
        await header_reads(pilot, app, "unreachable")


async def test_keymap_from_profile_remaps_a_binding() -> None:
    profile = replace(KIMI, keys={"app.help": "f1"})
    app = ServedeckApp(profile, canned_deck(profile))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("f1")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)


async def test_command_palette_opens_on_colon() -> None:
    from textual.command import CommandPalette

    app = ServedeckApp(KIMI, canned_deck(KIMI))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("colon")
        for _ in range(50):
            await pilot.pause(0.1)
            if isinstance(app.screen, CommandPalette):
                break
        assert isinstance(app.screen, CommandPalette)


def test_shell_snapshot_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(
        ServedeckApp(KIMI, canned_deck(KIMI)), terminal_size=(80, 24), run_before=_settle
    )


def test_shell_snapshot_200x60(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(
        ServedeckApp(KIMI, canned_deck(KIMI)), terminal_size=(200, 60), run_before=_settle
    )


async def _settle(pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.pause(0.3)


async def test_a_cut_ended_before_the_console_looked_is_still_shown_and_stamped() -> None:
    """A connection lost and re-opened between two health ticks (a command in flight
    reconnected at once) is an outage on the console's record and a note on the header
    for a while after, not a half-second blink a busy screen never draws."""

    class Flaky(CannedHost):
        connected = True
        connection_losses = 0

    host = Flaky()
    app = ServedeckApp(KIMI, canned_deck(KIMI, host))
    async with app.run_test(size=(120, 30)) as pilot:
        header = await header_reads(pilot, app, "connected")
        assert app.sources.host_outages == []
        host.connection_losses = 1  # cut and reconnected: `connected` never read False
        await pilot_wait(
            pilot,
            lambda: (
                bool(app.sources.host_outages)
                and app.sources.host_outages[-1].ended_mono_s is not None
            ),
            lambda: f"an ended outage, have {app.sources.host_outages!r}",
            timeout_s=10.0,
        )
        await pilot_wait(
            pilot,
            lambda: "reconnected after a" in header.render().plain,
            lambda: f"the reconnected note, header {header.render().plain!r}",
            timeout_s=5.0,
        )
        assert header.connection_state == "connected"
        assert len(app.sources.host_outages) == 1


async def test_plain_console_states_no_service_it_does_not_have() -> None:
    """Plain `servedeck` (no unit, no log): no load strip saying "stopped 0:00"."""
    from tests.support.screen_text import screen_text
    from tui.core.profile_store import load_profile
    from tui.deck import Deck
    from tui.hosts.local import LocalHost

    profile = load_profile(None)
    app = ServedeckApp(profile, Deck(profile, LocalHost()))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(1.0)
        text = screen_text(app)
        assert "no profile" in text
        assert "stopped" not in text, text
