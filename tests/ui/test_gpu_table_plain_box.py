"""GpuTable draws what Textual would and follows style changes; so does the process list.

A table without border, padding, tint or opacity skips Textual's per-line styling and
keeps its row styles until a style changes. Each check below draws every line both
ways (the table's path, then Textual's Widget.render_lines) and compares the result,
and checks that a focus or theme change is seen.
"""

from __future__ import annotations

from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from tests.support.gpu_boxes import GIB, loading_history, with_memory
from tests.support.gpu_pane_app import GpuPaneApp
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable
from widgets.line_static import LineStatic


def _both_ways(table: GpuTable, crop: Region) -> tuple[list[Strip], list[Strip]]:
    table._styles_cache.clear()
    ours = table.render_lines(crop)
    table._styles_cache.clear()
    table._styles, table._plain.key = None, None  # Textual's way, styles looked up afresh
    theirs = Widget.render_lines(table, crop)
    table._styles_cache.clear()
    return ours, theirs


def _segments(strips: list[Strip]) -> list[list[tuple[str, str]]]:
    return [[(segment.text, str(segment.style)) for segment in strip] for strip in strips]


async def test_plain_table_lines_match_textuals_and_follow_focus_and_theme() -> None:
    snapshot, trends = loading_history()
    app = GpuPaneApp(snapshot, trends)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        width, height = table.size
        whole, middle = Region(0, 0, width, height), Region(20, 2, 50, 5)
        assert table._plain.plain
        focused, _ = _both_ways(table, whole)
        for crop in (whole, middle):
            ours, theirs = _both_ways(table, crop)
            assert _segments(ours) == _segments(theirs)
        app.query_one(GpuPane).update_view(with_memory(snapshot, 2, 80 * GIB), trends)
        await pilot.pause()
        ours, theirs = _both_ways(table, whole)
        assert _segments(ours) == _segments(theirs)
        assert any("80.0/95.6G" in strip.text for strip in ours)

        table.blur()  # the cursor's style and the focus tint change: looked up again
        await pilot.pause()
        blurred, theirs = _both_ways(table, whole)
        assert _segments(blurred) == _segments(theirs)
        assert _segments(blurred) != _segments(focused)

        theme = "textual-light" if app.theme != "textual-light" else "nord"
        app.theme = theme
        await pilot.pause()
        themed, theirs = _both_ways(table, whole)
        assert _segments(themed) == _segments(theirs)
        assert _segments(themed) != _segments(blurred)


async def test_side_padding_is_drawn_and_top_padding_takes_textuals_path() -> None:
    snapshot, trends = loading_history()
    app = GpuPaneApp(snapshot, trends)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        for padding, plain in (((0, 2), True), ((1, 3, 0, 1), False)):
            table.styles.padding = padding
            await pilot.pause()
            ours, theirs = _both_ways(table, Region(0, 0, *table.outer_size))
            assert table._plain.plain is plain
            assert _segments(ours) == _segments(theirs)
            assert ours[1].text.startswith(" " * (padding[-1] + 1))  # the padding is drawn


async def test_the_process_lists_kept_link_style_follows_the_theme() -> None:
    snapshot, trends = loading_history()
    app = GpuPaneApp(snapshot, trends)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        lines = app.query_one("#gpu-detail", LineStatic)
        before = lines.link_style
        assert before == Widget.link_style.fget(lines)  # type: ignore[attr-defined]
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        after = lines.link_style
        assert after == Widget.link_style.fget(lines)  # type: ignore[attr-defined]
        assert after != before
