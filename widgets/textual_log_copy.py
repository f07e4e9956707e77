"""A copy of Textual's `Log` (textual.widgets._log, Textual 8.2.8 as pinned in
pyproject.toml) with a flood's write and a row's drawing made cheap.

What differs from upstream, method by method (the rest is Log's own):
- `write_lines`: a batch is split with one search (log_rows), the render cache is touched
  only where it holds rows, and a batch of printable ASCII is measured by its longest
  line on the spot instead of per line in a thread.
- `_update_size`: printable ASCII measured by length (one cell a character).
- `render_lines`/`render_line`/`_render_line`: the widget's style, scroll offset and width
  read once per redraw, not once per row; a plain row's window of segments and their
  offsets made in one go.
- `_render_line_strip`: a row of printable ASCII built straight from the highlighter's
  spans (LogHighlighter), the segments Text.render gives.
A Textual upgrade must re-read these against the new `_log.py`: the snapshot tests and
tests/ui/test_log_view_*.py compare them with the stock path.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any, Self

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Log

from widgets.log_highlight import _LEVEL_STYLES, _SEARCH_STYLE, LogHighlighter

_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))


def printable_ascii(text: str) -> bool:
    """`text.isascii() and text.isprintable()`, ~5x faster on a flood's chunk: in ASCII
    only the controls (0x00-0x1F, 0x7F) are not printable, and bytes.translate drops the
    rest in one pass where isprintable looks each character up."""
    return text.isascii() and not text.encode("ascii").translate(None, _PRINTABLE_ASCII)


def log_rows(lines: list[str]) -> list[str]:
    """The rows Textual's Log makes of `lines` (each split by str.splitlines, so an empty
    line makes none). A batch of printable ASCII holds no line break: its lines are the
    rows, their own strings, not copies."""
    if printable_ascii("".join(lines)):
        return [line for line in lines if line] if "" in lines else lines
    return [row for line in lines for row in line.splitlines()]


class LogView(Log):
    """Textual's Log with a write and a row's drawing made cheap for a flood.

    - A write of plain lines: the stock Log splits every line, discards a cache entry per
      line and measures every write's lines in a new thread (escapes replaced, tabs
      expanded, cell widths). Here a batch is split with one search (log_rows), the cache
      is only touched where it holds rows, and a batch of printable ASCII is measured by its
      longest line on the spot (a line of printable ASCII is as wide as it is long); any
      other batch is measured as the stock Log does.
    - Drawing a row of printable ASCII (no selection): its segments are built straight
      from the highlighter's spans, the same segments Text.render gives (~5x faster; a
      flood redraws every visible row each frame). Overlapping spans, a selection or any
      other row take the stock path. The widget's style is read once per redraw, not once
      per row (it walks every ancestor's styles: ~40 % of a row's drawing).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._styles_for: tuple[Style, dict[str, Style]] | None = None
        # rich_style, the scroll offset and the width, read once for a render_lines
        self._redraw: tuple[Style, int, int, int] | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        scroll_x, scroll_y = self.scroll_offset
        self._redraw = (self.rich_style, scroll_x, scroll_y, self.size.width)
        try:
            return super().render_lines(crop)
        finally:
            self._redraw = None

    def render_line(self, y: int) -> Strip:
        if self._redraw is None:
            return super().render_line(y)
        _, scroll_x, scroll_y, width = self._redraw
        return self._render_line(scroll_y + y, scroll_x, width)

    def _render_line(self, y: int, scroll_x: int, width: int) -> Strip:
        """Log._render_line with the redraw's style; a plain row's window of segments and
        their offsets made in one go, as crop_extend and apply_offsets make them."""
        rich_style = self.rich_style if self._redraw is None else self._redraw[0]
        if y >= len(self._lines):
            return Strip.blank(width, rich_style)
        segments = self._plain_segments(y, rich_style)
        if segments is None:
            line = self._render_line_strip(y, rich_style)
            line = line.crop_extend(scroll_x, scroll_x + width, rich_style)
            return line.apply_offsets(scroll_x, y)
        length = len(self._lines[y])
        end = scroll_x + width
        if length < end:
            segments.append(Segment(" " * (end - length), rich_style))
            length = end
        start = max(0, scroll_x)
        if end <= start:
            return Strip([], 0)
        if start > 0 or end < length:
            segments = _crop(segments, start, end)
        offsets: list[Segment] = []
        x = scroll_x
        for text, style, _ in segments:
            offset_style = Style.from_meta({"offset": (x, y)})
            offsets.append(Segment(text, style + offset_style if style else offset_style))
            x += len(text)
        return Strip(offsets, end - start)

    def write_lines(self, lines: Iterable[str], scroll_end: bool | None = None) -> Self:
        """Log.write_lines: the same rows, scrolling and refresh."""
        is_vertical_scroll_end = self.is_vertical_scroll_end
        auto_scroll = self.auto_scroll if scroll_end is None else scroll_end
        lines = lines if isinstance(lines, list) else list(lines)
        plain = printable_ascii("".join(lines))  # one pass: no line break, one cell a char
        if plain:
            new_lines = [line for line in lines if line] if "" in lines else lines
        else:
            new_lines = log_rows(lines)
        start_line = len(self._lines)
        self._lines.extend(new_lines)
        if self.max_lines is not None and len(self._lines) > self.max_lines:
            self._prune_max_lines()
        self.virtual_size = Size(self._width, len(self._lines))
        if plain and new_lines:  # as wide as its longest line
            self._update_maximum_width(self._updates, max(map(len, new_lines)))
        else:
            self._update_size(self._updates, new_lines)
        cache = self._render_line_cache
        if cache:  # only a selection fills it
            written = range(start_line, start_line + len(new_lines))
            for y in [y for y in list(cache.keys()) if y in written]:
                cache.discard(y)
        ScrollView.refresh_lines(self, start_line, len(new_lines))
        if auto_scroll and not self.is_vertical_scrollbar_grabbed and is_vertical_scroll_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        else:
            self.refresh()
        return self

    def _update_size(self, updates: int, lines: list[str]) -> None:  # type: ignore[override]
        if lines:
            text = "".join(lines)
            if printable_ascii(text):
                self._update_maximum_width(updates, max(map(len, lines)))
                return
        super()._update_size(updates, lines)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles_for = None

    def _span_styles(self, rich_style: Style) -> dict[str, Style]:
        """What Text.render gives a span of each style name over `rich_style` (and "" for
        the text outside any span): the text's own style, the row's, the span's combined."""
        if self._styles_for is None or self._styles_for[0] != rich_style:
            get_style = partial(self.app.console.get_style, default=Style.null())
            own = get_style("")
            names = [style for _, style in _LEVEL_STYLES] + [_SEARCH_STYLE]
            styles = {name: Style.combine((own, rich_style, get_style(name))) for name in names}
            styles[""] = Style.combine((own, rich_style))
            self._styles_for = (rich_style, styles)
        return self._styles_for[1]

    def _plain_segments(self, y: int, rich_style: Style) -> list[Segment] | None:
        """The segments Text.render gives row `y` with the highlighter's spans, built
        straight from them; None where the stock path must draw it."""
        line = self._lines[y]
        highlighter = self.highlighter
        if (
            not line
            or not rich_style
            or not self.highlight
            or not isinstance(highlighter, LogHighlighter)
            or self.text_selection is not None
            or not printable_ascii(line)
        ):
            return None
        spans = sorted(highlighter.spans(line))
        styles = self._span_styles(rich_style)
        base = styles[""]
        segments: list[Segment] = []
        at = 0
        for start, end, name in spans:
            if start < at:  # overlapping spans: Text.render combines them
                return None
            if start > at:
                segments.append(Segment(line[at:start], base))
            segments.append(Segment(line[start:end], styles[name]))
            at = end
        if at < len(line):
            segments.append(Segment(line[at:], base))
        return segments

    def _render_line_strip(self, y: int, rich_style: Style) -> Strip:
        segments = self._plain_segments(y, rich_style)
        if segments is None:
            return super()._render_line_strip(y, rich_style)
        return Strip(segments, len(self._lines[y]))


def _crop(segments: list[Segment], start: int, end: int) -> list[Segment]:
    """Strip.crop's segments for characters one cell wide each."""
    out: list[Segment] = []
    pos = 0
    for segment in segments:
        text, style, _ = segment
        seg_end = pos + len(text)
        if seg_end > start and pos < end:
            if pos >= start and seg_end <= end:
                out.append(segment)
            else:
                out.append(Segment(text[max(0, start - pos) : end - pos], style))
        pos = seg_end
    return out
