"""Lines of a plain box handed to the line filters as they are, without Textual's styling pass.

For every changed line Textual's styles cache works out borders, outline, padding,
tint and opacity (walking the ancestors for the backgrounds), wraps the line in a new
Strip, then runs the app's line filters over that copy. A box with no border,
outline, top/bottom padding, tint, opacity or hatch needs none of it but the side
padding: its lines go to the filters as the widget drew them (padded at the sides),
kept in the same cache, so a kept line reuses its filtered Strips (Strip caches them).

What a widget's looks depend on is read from update counters: every style change (a
theme, focus, a class, CSS) bumps a counter on the styles it changed, and those of the
widget, its component classes and its ancestors (whose backgrounds show through) make
`style_key`. Relies on Textual internals, which is why Textual is pinned exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import LineFilter
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


def style_key(widget: Widget) -> tuple[int, ...]:
    """Changes whenever a style the widget is drawn with may have changed."""
    components = widget._component_styles
    return (
        *(node.styles._cache_key for node in widget.ancestors_with_self),
        *(components[name]._cache_key for name in sorted(components)),
    )


FilteredLine = Callable[[int, Sequence[LineFilter], Color], Strip]


class PlainLines:
    """One widget's plain-box state: whether its box is plain, and the styles its lines need."""

    def __init__(self) -> None:
        self.key: tuple[int, ...] | None = None
        self.plain = False
        self._sides = (0, 0)  # padding left and right
        self._pad_style: Style | None = None  # the padding's style, as Textual draws it
        self._background = Color(0, 0, 0, 0)  # what the line filters are given

    def update(self, widget: Widget) -> bool:
        """Read the widget's box again if a style changed; True when one did."""
        key = style_key(widget)
        if key == self.key:
            return False
        self.key = key
        widget._styles_cache.clear()  # lines drawn in the old styles
        styles = widget.styles
        top, right, bottom, left = styles.padding
        hatch = styles.hatch if styles.has_rule("hatch") else "none"
        self.plain = (
            not widget.BLANK
            and widget._border_title is None
            and widget._border_subtitle is None
            and not any(edge for edge, _ in styles.border)
            and not any(edge for edge, _ in styles.outline)
            and not (top or bottom)
            and styles.text_opacity == 1.0
            and styles.tint.a == 0
            and widget.opacity == 1.0
            and hatch == "none"
        )
        base_background, background = widget.background_colors
        inner, _ = widget._styles_cache.get_inner_outer(base_background, background)
        self._sides, self._pad_style = (left, right), inner.rich_style
        self._background = background
        return True

    def render(self, widget: Widget, crop: Region) -> list[Strip] | None:
        """The widget's lines in crop, or None where Textual's own path must draw them."""
        width = widget.outer_size.width
        left, right = self._sides
        if not self.plain or widget.size.width != width - left - right:
            return None
        if widget.auto_links and widget.hover_style._link_id:
            return None  # a link under the mouse: Textual restyles it
        cache = widget._styles_cache
        if width != cache._width:
            cache.clear()
            cache._width = width
        lines, dirty = cache._cache, cache._dirty_lines
        background, filters = self._background, widget.app.get_line_filters()
        content_width, pad_style = width - left - right, self._pad_style
        # A widget that draws its lines through the filters itself (GpuTable) keeps them
        # filtered here; its lines span the box (no side padding).
        filtered_line: FilteredLine | None = getattr(widget, "render_filtered_line", None)
        if left or right:
            filtered_line = None
        strips: list[Strip] = []
        for y in crop.line_range:
            strip = lines.get(y) if y not in dirty else None
            if filtered_line is not None:
                if strip is None:
                    if (old := lines.get(y)) is not None:
                        release(old)
                    strip = lines[y] = filtered_line(y, filters, background)
                strips.append(strip)
                continue
            if strip is None:
                if (old := lines.get(y)) is not None:
                    release(old)
                strip = widget.render_line(y).adjust_cell_length(content_width, pad_style)
                if left or right:
                    strip = Strip(_padded(list(strip), left, right, pad_style), width)
                lines[y] = strip
            for line_filter in filters:
                strip = strip.apply_filter(line_filter, background)
            strips.append(strip)
        dirty.difference_update(crop.line_range)
        if crop.column_span != (0, width):
            x1, x2 = crop.column_span
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips


def release(strip: Strip, depth: int = 4) -> None:
    """Break the cycles a replaced line's Strips are in, so they are freed at once.

    The compositor divides each drawn Strip at the screen's cuts, and a Strip kept
    whole caches itself in its divide cache: a reference cycle, left for the garbage
    collector with its segments and caches (~25 objects a changed line, several
    collections a tick's worth). Clearing the divide caches of a line's Strips, and
    of those derived from them (filtered, cropped), when the line is replaced frees
    them by reference counting instead. Only caches are cleared.
    """
    strip._divide_cache.clear()
    if depth:
        for derived in (*strip._filter_cache._cache.values(), *strip._crop_cache._cache.values()):
            if derived is not strip:
                release(derived, depth - 1)


def _padded(segments: list[Segment], left: int, right: int, style: Style | None) -> list[Segment]:
    """The line between blank sides, as Textual pads it."""
    return [
        *([Segment(" " * left, style)] if left else []),
        *segments,
        *([Segment(" " * right, style)] if right else []),
    ]
