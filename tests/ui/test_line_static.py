"""LineStatic draws what a Static draws, re-rendering only the lines whose markup changed."""

from __future__ import annotations

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import Static

from widgets.line_static import LineStatic

CSS = """
Static { width: 56; height: 8; padding: 0 1; }
"""
TITLE = "[b]GPU 2 processes[/] [dim]· t: topology[/]"
HEADER = "[dim]PID      USER       GPU MEM     AGE  COMMAND[/]"
MARKUPS = [
    f"{TITLE}\n{HEADER}\n4242     alice        1.50G     12s  vllm",
    f"{TITLE}\n{HEADER}\n4242     alice        1.75G     13s  vllm",  # one line changed
    f"{TITLE}\n{HEADER}\n4242     alice        1.75G     13s  vllm\n"
    "7 [red]a long command line that is much wider than the widget, so it wraps[/] end",
    "[dim]select a GPU to see its processes · t: topology[/]",  # fewer lines
    f"{TITLE}\n[red]GPU lost \\[bus][/]",  # escapes take Rich's own way
]


class SideBySide(App[None]):
    CSS = CSS

    def compose(self) -> ComposeResult:
        yield LineStatic(id="lines")
        yield Static(id="reference")


def _drawn(widget: Static) -> list[list[Segment]]:
    return [list(strip) for strip in widget.render_lines(Region(0, 0, 56, 8))]


async def test_every_update_draws_what_a_static_draws() -> None:
    app = SideBySide()
    async with app.run_test(size=(70, 20)) as pilot:
        lines, reference = app.query_one("#lines", LineStatic), app.query_one("#reference", Static)
        for markup in MARKUPS:
            lines.show_markup(markup)
            reference.update(markup)
            await pilot.pause()
            assert _drawn(lines) == _drawn(reference), markup
            assert str(lines.render()) == str(reference.render())


async def test_only_changed_lines_are_rendered_again() -> None:
    app = SideBySide()
    async with app.run_test(size=(70, 20)) as pilot:
        lines = app.query_one("#lines", LineStatic)
        lines.show_markup(MARKUPS[0])
        await pilot.pause()
        lines.render_lines(Region(0, 0, 56, 8))
        before = [lines.render_line(y) for y in range(3)]
        lines.show_markup(MARKUPS[1])
        after = [lines.render_line(y) for y in range(3)]
        assert after[0] is before[0] and after[1] is before[1]  # kept, not rendered again
        assert after[2] is not before[2] and "1.75G" in after[2].text
        await pilot.pause()
        assert "1.75G" in lines.render_lines(Region(0, 2, 56, 1))[0].text


class _AutoHeight(App[None]):
    def compose(self) -> ComposeResult:
        yield LineStatic(id="lines")
        yield Static("below", id="below")


async def test_an_auto_height_follows_the_number_of_lines() -> None:
    app = _AutoHeight()
    async with app.run_test(size=(40, 12)) as pilot:
        lines = app.query_one("#lines", LineStatic)
        lines.show_markup("one\ntwo")
        await pilot.pause()
        assert lines.size.height == 2
        lines.show_markup("one\n[b]2[/]")  # the same number of lines
        await pilot.pause()
        assert lines.size.height == 2 and app.query_one("#below").region.y == 2
        lines.show_markup("one\ntwo\nthree")
        await pilot.pause()
        assert lines.size.height == 3 and app.query_one("#below").region.y == 3
