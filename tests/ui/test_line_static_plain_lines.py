"""LineStatic's plain lines (no markup, fit the width) are drawn as Textual's formatting draws them.

A process row is plain text; LineStatic builds its Strip directly instead of parsing
and formatting it. Each check draws the same lines both ways (the direct path, then
Textual's Content formatting by switching the direct path off) and compares every
segment, styles and selection offsets included.
"""

from __future__ import annotations

import random

from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.app import App, ComposeResult
from textual.content import Content
from textual.geometry import Region
from textual.style import Style

import widgets.line_static as line_static
from widgets.line_static import LineStatic

WIDTH = 50
TRICKY = [
    "4242     alice        1.50G     12s  vllm",
    "7 $var & @click :smile: a=b (x) {y} <z> 'q' \"w\" `e` ~|^_",
    "x" * WIDTH,  # exactly the width
    "x" * (WIDTH + 1),  # wider: wraps, Textual's way
    " leading blank",
    "trailing blank ",
    "tab\there",
    "bracket [b]bold[/] and \\[escape]",
    "ünïcode wide 中文",
    "",
    "a  b   c    d",
]


class OneList(App[None]):
    CSS = f"LineStatic {{ width: {WIDTH}; height: 20; }}"

    def compose(self) -> ComposeResult:
        yield LineStatic(id="lines")


def _segments(widget: LineStatic, height: int) -> list[list[Segment]]:
    """The lines drawn afresh (none kept from an earlier draw)."""
    widget._rendered_for = None
    widget._styles_cache.clear()
    return [list(strip) for strip in widget.render_lines(Region(0, 0, WIDTH, height))]


def _random_lines(count: int) -> list[str]:
    rng = random.Random(18)
    alphabet = [chr(code) for code in range(32, 127)]
    return ["".join(rng.choices(alphabet, k=rng.randrange(1, WIDTH + 3))) for _ in range(count)]


async def test_plain_lines_draw_like_textuals_formatting() -> None:
    app = OneList()
    async with app.run_test(size=(60, 30)) as pilot:
        lines = app.query_one("#lines", LineStatic)
        for batch in (TRICKY, *[_random_lines(12) for _ in range(10)]):
            markup = "\n".join(line.replace("[", "\\[") for line in batch)
            lines.show_markup(markup)
            await pilot.pause()
            direct = _segments(lines, len(batch))
            lines._plain_lines_drawn_as_is = lambda: False  # type: ignore[method-assign]
            formatted = _segments(lines, len(batch))
            del lines._plain_lines_drawn_as_is
            assert direct == formatted, batch


async def test_a_process_row_takes_the_direct_path_and_alignment_does_not(monkeypatch) -> None:
    formatted: list[str] = []

    class CountingLineAt(line_static._LineAt):
        def __init__(self, line: Content, y: int) -> None:
            formatted.append(line.plain)
            super().__init__(line, y)

    monkeypatch.setattr(line_static, "_LineAt", CountingLineAt)
    app = OneList()
    async with app.run_test(size=(60, 30)) as pilot:
        lines = app.query_one("#lines", LineStatic)
        lines.show_markup("[b]GPU 0 processes[/]\n4242     alice        1.50G     12s  vllm")
        await pilot.pause()
        assert formatted == ["GPU 0 processes"]  # the process row was built directly
        lines.show_markup("[b]GPU 0 processes[/]\n4242     alice        1.75G     13s  vllm")
        await pilot.pause()
        assert formatted == ["GPU 0 processes"]
        assert "1.75G" in lines.render_line(1).text
        assert lines._plain_lines_drawn_as_is()
        lines.styles.text_align = "right"
        await pilot.pause()
        assert not lines._plain_lines_drawn_as_is()
        right = _segments(lines, 2)
        assert right[1][0].text.strip() == ""  # padded on the left: Textual's path drew it


async def test_a_changed_process_row_reuses_its_rows_offset_style(monkeypatch) -> None:
    """A busy GPU's process rows change every tick (memory, age): each new row's Strip takes
    the row's offset style kept from before, not a new Rich style (and a pickled meta)."""
    built: list[tuple[int, int]] = []
    original = Style.rich_style_with_offset

    def counting(self: Style, x: int, y: int) -> RichStyle:
        built.append((x, y))
        return original(self, x, y)

    monkeypatch.setattr(Style, "rich_style_with_offset", counting)
    app = OneList()
    async with app.run_test(size=(60, 30)) as pilot:
        lines = app.query_one("#lines", LineStatic)
        for tick in range(10):
            lines.show_markup(
                "[b]GPU 0 processes[/]\n"
                f"4242     alice        1.{tick:02d}G     {tick}s  vllm\n"
                f"4243     alice        2.{tick:02d}G     {tick}s  vllm"
            )
            await pilot.pause()
        before = list(lines.render_line(1))
        assert "1.09G" in lines.render_line(1).text
        assert [y for _, y in built].count(1) <= 1, built  # was one per tick
        assert [y for _, y in built].count(2) <= 1, built
        # the kept style is the one Textual gives that row: selection offsets unchanged
        assert before[0].style == original(lines.visual_style, 0, 1)
