"""update_static draws a text again only when it differs from what the widget shows (issue 18).

Status lines (service, load strip) are re-sent every second and mostly say the same;
a repaint of an unchanged line was most of a quiet tick's drawing.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Static

from widgets.quiet_update import update_static


class _App(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("", id="text")


def _shown(widget: Static) -> str:
    return "\n".join(strip.text for strip in widget.render_lines(widget.region.reset_offset))


async def test_the_same_text_again_is_not_redrawn_and_a_change_is() -> None:
    app = _App()
    async with app.run_test(size=(40, 6)) as pilot:
        widget = app.query_one("#text", Static)
        refreshes = 0
        refresh = widget.refresh

        def counting(*args: object, **kwargs: object) -> Static:
            nonlocal refreshes
            refreshes += 1
            return refresh(*args, **kwargs)

        widget.refresh = counting  # type: ignore[method-assign]
        update_static(widget, "[b]ready[/] 3 reqs")
        await pilot.pause()
        first = refreshes
        assert first >= 1 and "ready 3 reqs" in _shown(widget)

        update_static(widget, "[b]ready[/] 3 reqs")  # the same markup: nothing to do
        line = Text("unit active")
        line.append(" ● ready", style="bold green")
        update_static(widget, line)
        await pilot.pause()
        after_text = refreshes
        assert after_text > first and "unit active ● ready" in _shown(widget)

        again = Text("unit active")
        again.append(" ● ready", style="bold green")
        update_static(widget, again)  # an equal Text, a new object: still nothing
        assert refreshes == after_text

        restyled = Text("unit active")
        restyled.append(" ● ready", style="bold red")
        update_static(widget, restyled)  # same letters, another style: drawn
        assert refreshes > after_text
        assert widget.content is not again

        widget.update("set elsewhere")  # the widget changed behind update_static's back
        await pilot.pause()
        update_static(widget, restyled)  # so the same text as its last call is drawn again
        await pilot.pause()
        assert "unit active ● ready" in _shown(widget)
