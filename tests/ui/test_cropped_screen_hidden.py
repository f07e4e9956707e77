"""The line-cropping compositor skips widgets hidden behind others and draws what Textual would."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from tui.screens.cropped_screen import CroppedScreen, LineCroppingCompositor

CSS = """
#left { width: 30; background: darkblue; }
#right { background: darkgreen; padding: 1 2; }
#narrow { width: 20; height: 3; background: darkred; }
#full { height: 4; background: purple; }
"""


class _Layout(App[None]):
    CSS = CSS

    def get_default_screen(self) -> CroppedScreen:
        return CroppedScreen(id="_default")

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static("left pane\n" * 8, id="left")
            with Vertical(id="right"):
                yield Static("narrow\nrows\nhere", id="narrow")
                yield Static("full width\n" * 4, id="full")


def _lines(
    chops: list[dict[int, object]], rows: list[int], crop: Region
) -> dict[int, list[tuple[int, str, str]]]:
    """The cells of the update's columns (the only ones sent to the terminal)."""
    drawn: dict[int, list[tuple[int, str, str]]] = {}
    for y in rows:
        cells = drawn[y] = []
        for cut in sorted(chops[y]):
            strip = chops[y][cut]
            if strip is None or cut >= crop.right or cut + strip.cell_length <= crop.x:  # type: ignore[attr-defined]
                continue
            part = strip.crop(max(0, crop.x - cut), crop.right - cut)  # type: ignore[attr-defined]
            cells.append((max(cut, crop.x), part.text, str([str(s.style) for s in part])))
    return drawn


async def test_crops_draw_what_textual_draws_and_hidden_widgets_are_not_rendered() -> None:
    app = _Layout()
    async with app.run_test(size=(80, 16)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        assert isinstance(compositor, LineCroppingCompositor)
        rendered: list[str] = []
        for widget in app.screen.walk_children(Widget, with_self=True):
            original = widget.render_lines

            def spy(crop: Region, widget: Widget = widget, original=original) -> list:  # type: ignore[no-untyped-def, type-arg]
                rendered.append(str(widget.id or type(widget).__name__))
                return original(crop)

            widget.render_lines = spy  # type: ignore[method-assign]
        crops = [
            Region(0, 0, 80, 16),  # everything
            Region(32, 2, 10, 3),  # inside the narrow Static: nothing behind it renders
            Region(32, 6, 40, 3),  # the full-width Static, and the padding beside it
            Region(50, 1, 20, 3),  # right of the narrow Static: its container shows
            Region(0, 3, 10, 2),  # the left pane only
        ]
        for crop in crops:
            rows = list(range(crop.y, crop.bottom))
            rendered.clear()
            ours = _lines(compositor._render_chops(crop, rows.__contains__), rows, crop)  # type: ignore[arg-type]
            ours_rendered = list(rendered)
            compositor._get_renders = super(LineCroppingCompositor, compositor)._get_renders  # type: ignore[method-assign]
            try:
                theirs = _lines(compositor._render_chops(crop, rows.__contains__), rows, crop)  # type: ignore[arg-type]
            finally:
                del compositor._get_renders
            assert ours == theirs, crop
            if crop.x >= 30:  # the right pane: the left one is beside it, nothing renders
                assert "left" not in ours_rendered, crop
            if crop.y > 0:  # the screen and the row are drawn over by their children
                assert "Horizontal" not in ours_rendered, crop
                assert "CroppedScreen" not in ours_rendered, crop
            if crop == Region(0, 3, 10, 2):
                assert ours_rendered == ["left"]
            if crop == Region(50, 1, 20, 3):  # beside the narrow Static its container shows
                assert "right" in ours_rendered
