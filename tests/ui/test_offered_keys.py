"""Keys, footer, palette and `?` offer only what works where the operator is (issue items 11-13).

On the simulator (real processes), at 80x24. The key table is the one source: every
binding of the app, the log, the GPU pane and table and the summary preview is in it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator

from textual.command import CommandPalette
from textual.widgets import Log

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core import paths
from tui.core.config import demo_profile
from tui.core.keymap import COMMANDS, commands_in
from tui.core.profile_store import load_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.help import HelpScreen
from tui.screens.summary import SummaryScreen
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable
from widgets.log_pane import LogPane

SIZE = (80, 24)


@contextlib.contextmanager
def demo_deck(read_only: bool = False, serving: bool = False) -> Iterator[Deck]:
    deck = open_deck(demo_profile(read_only=read_only), demo_load_s=3.0, demo_autostart=serving)
    try:
        yield deck
    finally:
        deck.box.close()  # type: ignore[attr-defined]  # the demo's Deck is a SimDeck


async def until(pilot, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def footer_keys(app: ServedeckApp) -> set[str]:
    """The keys the footer shows now (what the operator is offered)."""
    return {
        binding.key
        for (_node, binding, enabled, _tooltip) in app.active_bindings.values()
        if binding.show and enabled
    } | {
        binding.key
        for (_node, binding, enabled, _tooltip) in app.screen.active_bindings.values()
        if binding.show and enabled
    }


def test_every_widget_binding_is_in_the_one_key_table() -> None:
    table = {(command.scope, command.action) for command in COMMANDS}
    for scope, cls in (("log", LogPane), ("gpu", GpuPane), ("summary", SummaryScreen)):
        for binding in cls.BINDINGS:
            assert (scope, binding.action) in table, (cls.__name__, binding)  # type: ignore[union-attr]
    for binding in GpuTable.BINDINGS:  # the table binds its cursor keys itself: they must agree
        keys = {command.key: command.action for command in commands_in("gpu-table")}
        assert keys.get(binding.key) == binding.action, binding
    ids = [command.binding_id for command in COMMANDS]
    assert len(ids) == len(set(ids)), "binding ids are unique (the keymap remaps by id)"


async def test_ctrl_p_opens_the_palette_and_finds_presets_by_name() -> None:
    with demo_deck() as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+p")
            await until(pilot, lambda: isinstance(app.screen, CommandPalette), 10, "the palette")
            titles = [command.title for command in app.get_system_commands(app.screen)]
            assert len(titles) == len(set(titles)), f"two commands of one name: {titles}"
            for name in deck.profile.benchmark.presets:
                assert any(name in title for title in titles), (name, titles)
            await pilot.press("escape")
            await pilot.press("colon")
            await until(pilot, lambda: isinstance(app.screen, CommandPalette), 10, "the palette")


async def test_stopped_service_offers_start_not_stop() -> None:
    with demo_deck() as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.unit_state is not None, 30, "the unit's state")
            assert not app.unit_state.is_active  # type: ignore[union-attr]
            await pilot.pause(0.2)
            keys = footer_keys(app)
            assert "S" in keys and "X" not in keys, keys
            await pilot.press("X")
            await pilot.pause(0.3)
            assert not isinstance(app.screen, ConfirmActionScreen), "X opened the stop dialog"
            await pilot.press("S")
            await until(pilot, lambda: isinstance(app.screen, ConfirmActionScreen), 10, "ask")


async def test_read_only_footer_offers_no_change() -> None:
    with demo_deck(read_only=True) as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.unit_state is not None, 30, "the unit's state")
            await pilot.pause(0.2)
            keys = footer_keys(app)
            assert not {"S", "X", "K", "R"} & keys, keys
            for key in ("S", "K"):
                await pilot.press(key)
                await pilot.pause(0.2)
                assert app.screen is app.screen_stack[0], f"{key} opened a dialog in read-only"
            # Pressed anyway (a browser visitor does): a refusal the operator sees, audited.
            said = [note.message for note in app._notifications]
            assert any("Start (S) is refused" in text for text in said), said
            assert any("Clean up (K) is refused" in text for text in said), said
            await pilot.press("1")  # a key that changes nothing is not "refused"
            await pilot.pause(0.2)
            records = [json.loads(line) for line in paths.audit_log_path().read_text().splitlines()]
            refused = [r for r in records if r["event"] == "console.refused"]
            assert [r["pressed"] for r in refused] == ["S", "K"], refused
            assert all(r["reason"] == "read-only mode" for r in refused)
            assert not [r for r in records if r["event"].startswith(("service.", "kill."))]


async def test_read_only_refuses_benchmark_and_capacity_against_a_serving_box() -> None:
    """A benchmark loads the server: read-only, b, B and C leave the footer and are refused."""
    with demo_deck(read_only=True, serving=True) as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=SIZE) as pilot:
            await until(
                pilot, lambda: bool(app.unit_state and app.unit_state.is_active), 30, "serving"
            )
            await pilot.pause(0.2)
            keys = footer_keys(app)
            assert not {"b", "B", "C"} & keys, keys
            for key in ("b", "C", "B"):
                await pilot.press(key)
                await pilot.pause(0.2)
                assert app.screen is app.screen_stack[0], f"{key} opened a dialog in read-only"
            assert app.bench.process is None, "a benchmark started in read-only"
            said = [note.message for note in app._notifications]
            for refusal in ("Bench (b) is refused", "Capacity (C) is refused"):
                assert any(refusal in text for text in said), said
            titles = [command.title for command in app.get_system_commands(app.screen)]
            assert not [title for title in titles if title.startswith(("Bench", "Capacity"))]
            app.action_bench("sweep")  # reached without a key (the palette): refused too
            assert app.bench.process is None
            records = [json.loads(line) for line in paths.audit_log_path().read_text().splitlines()]
            refused = [r for r in records if r["event"] == "console.refused"]
            assert [r["pressed"] for r in refused] == ["b", "C", "B", "palette"], refused
            assert [r["action"] for r in refused][:2] == ["bench", "bench_capacity"]
            assert all(r["reason"] == "read-only mode" for r in refused)
            assert not [r for r in records if r["event"].startswith("bench")]


async def test_log_keys_work_without_tab_and_help_lists_them() -> None:
    with demo_deck() as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=SIZE) as pilot:
            log_pane = app.query_one(LogPane)
            await until(pilot, lambda: isinstance(app.focused, Log), 10, "the focus on the log")
            assert "f" in footer_keys(app) and "slash" in footer_keys(app)
            await pilot.press("f")
            assert log_pane.level_filter == "warnings"
            await pilot.press("3", "1")  # away and back: the log has the focus again
            await until(pilot, lambda: isinstance(app.focused, Log), 10, "the focus back")
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen), 10, "help")
            rendered = _static_text(app.screen.query_one("#help-here"))
            for command in (*commands_in("log"), *commands_in("gpu-table")):
                assert command.help in rendered, command.help


def _static_text(widget) -> str:  # type: ignore[no-untyped-def]
    """The plain text a Static holding a rich renderable draws, at a width that fits."""
    from io import StringIO

    from rich.console import Console

    buffer = StringIO()
    Console(file=buffer, width=200, color_system=None).print(widget.content)
    return buffer.getvalue()


async def test_help_over_the_summary_preview_lists_its_keys_first() -> None:
    profile = load_profile(None)
    app = ServedeckApp(profile, Deck(profile, LocalHost()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SummaryScreen), 10, "the preview")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), 10, "help")
        here = _static_text(app.screen.query_one("#help-here"))
        for command in commands_in("summary"):
            assert command.help in here, (command.help, here)
        assert "Leave servedeck" not in here  # the preview takes every key: q closes it
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, SummaryScreen), 10, "back in it")


async def test_k_is_offered_on_the_processes_pane_only() -> None:
    profile = load_profile(None)
    app = ServedeckApp(profile, Deck(profile, LocalHost()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        assert "k" not in footer_keys(app)
        await pilot.press("3")
        await pilot.pause(0.3)
        assert "k" in footer_keys(app)
        await pilot.press("1")
        await pilot.pause(0.3)
        assert "k" not in footer_keys(app)
