"""A screen whose partial updates draw only the lines that changed.

On a partial update (a few GPU rows, the process list) Textual's compositor asks
every widget on the screen to render its whole region, the header, the footer,
the log and each container behind the table included, then keeps only the
changed lines: most of a refresh tick's CPU. This compositor asks each widget
for just the lines of the update, at full width (so the column cuts, and the
output, are Textual's own). Full updates (a layout, a resize) are unchanged.
Relies on Textual internals, which is why Textual is pinned exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import Compositor
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip


class LineCroppingCompositor(Compositor):
    """Renders, for a partial update, only the widgets' lines inside the update."""

    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        if crop is None:
            yield from super()._get_renders(crop)
            return
        intersection = Region.intersection
        # Screen line -> the column spans drawn on it by the widgets yielded so far. They
        # come front to back and the front one's cells win, so a container whose part of
        # the update is all drawn by widgets in front of it (the panes behind the GPU
        # table) would render for nothing: it is skipped. Columns outside the update are
        # never sent to the terminal.
        drawn: dict[int, list[tuple[int, int]]] = {}
        crop_left, crop_right = crop.x, crop.right
        crop_top, crop_bottom = crop.y, crop.y + crop.height
        for widget, (region, clip) in self.visible_widgets.items():
            # Most widgets have no line in a tick's few rows: told by integers, before any
            # Region is built for them (a screen holds ~35 visible widgets).
            if max(region.y, clip.y, crop_top) >= min(
                region.y + region.height, clip.y + clip.height, crop_bottom
            ):
                continue
            # the update's lines, across the widget's whole clip: columns as Textual cuts them
            clip = intersection(clip, Region(clip.x, crop.y, clip.width, crop.height))
            x, y, width, height = intersection(region, clip)
            if not (width and height) or x + width <= crop_left or x >= crop_right:
                continue  # no line in the update, or all of it beside the update
            if _hidden(drawn, max(x, crop_left), min(x + width, crop_right), y, y + height):
                continue
            for line in range(y, y + height):
                drawn.setdefault(line, []).append((x, x + width))
            lines = Region(x - region.x, y - region.y, width, height)
            yield region, clip, widget.render_lines(lines)


def _hidden(
    drawn: dict[int, list[tuple[int, int]]], left: int, right: int, top: int, bottom: int
) -> bool:
    """Whether columns left..right of every line top..bottom are already drawn."""
    for line in range(top, bottom):
        reach = left
        for start, end in sorted(drawn.get(line, ())):
            if start > reach:
                break
            reach = max(reach, end)
        if reach < right:
            return False
    return True


class CroppedScreen(Screen[None]):
    """The console's main screen, with the line-cropping compositor."""

    def __init__(self, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self._compositor = LineCroppingCompositor()
