"""A busy GPU tick is drawn with no message round trip and no layout: only its changed rows.

Each second a busy box changes utilization and power on its rows; everything else on the
screen stays. The work is counted, not timed: messages the table and the screen handle,
layouts, and rows drawn, over ticks fed to a real GpuPane on the console's screen. What
the terminal is sent is read from the compositor's own updates, so the fast path is shown
to draw the new values.
"""

from __future__ import annotations

import re

from rich.console import Console
from textual import events
from textual.message import Message
from textual.screen import Screen

from tests.support.gpu_boxes import busy_tick, rtx_pro_6000_box
from tests.support.gpu_pane_app import GpuPaneApp
from tui.screens.cropped_screen import CroppedScreen
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable

TICKS = 12
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class _ConsoleScreenApp(GpuPaneApp):
    """The GPU pane on the console's screen (its line-cropping compositor)."""

    def get_default_screen(self) -> Screen[None]:
        return CroppedScreen()


async def test_busy_ticks_post_no_message_and_draw_only_the_changed_rows() -> None:
    snapshot = rtx_pro_6000_box()
    app = _ConsoleScreenApp(snapshot)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        pane, table, screen = app.query_one(GpuPane), app.query_one(GpuTable), app.screen
        handled: list[str] = []
        sent: list[str] = []
        layouts: list[int] = []
        for pump in (table, screen):
            dispatch = pump._dispatch_message

            async def counted(message: Message, pump=pump, dispatch=dispatch) -> None:  # type: ignore[no-untyped-def]
                if not isinstance(message, events.Callback):  # the Pilot's own pauses
                    handled.append(f"{type(message).__name__} -> {type(pump).__name__}")
                await dispatch(message)

            pump._dispatch_message = counted  # type: ignore[method-assign]
        render_update = screen._compositor.render_update

        def kept_update(*args, **kwargs):  # type: ignore[no-untyped-def]
            update = render_update(*args, **kwargs)
            if update is not None:
                console = Console(width=160, force_terminal=True, color_system="truecolor")
                sent.append(ANSI.sub("", "".join(update.render_segments(console))))
            return update

        screen._compositor.render_update = kept_update  # type: ignore[method-assign]
        refresh_layout = screen._refresh_layout
        screen._refresh_layout = lambda *a, **k: (layouts.append(1), refresh_layout(*a, **k))[1]  # type: ignore[method-assign]

        repainted = 0
        for tick in range(1, TICKS + 1):
            pane.update_view(busy_tick(snapshot, tick), {})
            repainted += table.rows_repainted
            await pilot.pause()
            await pilot.pause()

        assert layouts == []
        # GPU 1's row each tick, and the totals when their rounded sums moved; nothing else
        assert TICKS <= repainted <= 2 * TICKS
        # Before, each tick took a Prompt to the table, an Update and a Prompt to the screen.
        assert handled == [], handled
        assert len(sent) == TICKS  # one screen update a tick, each with the new reading
        for tick, text in enumerate(sent, start=1):
            assert f"{50 + tick}%" in text and f"{300 + tick}/600W" in text, text


async def test_busy_ticks_set_no_style_rule() -> None:
    """A tick that shows what was shown sets no style: before, the pane wrote `display` on
    its message, table and detail each tick (three style rules, each through Textual's
    style machinery), all to the values they had."""
    snapshot = rtx_pro_6000_box()
    app = _ConsoleScreenApp(snapshot)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        pane = app.query_one(GpuPane)
        rules: list[str] = []
        for widget in pane.query("*"):
            styles = widget.styles._inline_styles
            set_rule = styles.set_rule

            def counted(rule: str, value: object, set_rule=set_rule) -> bool:  # type: ignore[no-untyped-def]
                rules.append(rule)
                return set_rule(rule, value)  # type: ignore[no-any-return]

            styles.set_rule = counted  # type: ignore[method-assign]
        for tick in range(1, TICKS + 1):
            pane.update_view(busy_tick(snapshot, tick), {})
            await pilot.pause()
        assert rules == []
