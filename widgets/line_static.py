"""LineStatic: a Static whose markup is drawn line by line, each line kept as Strips.

The GPU pane's process list changes a number or two per tick, yet a Static parses
and renders its whole markup on each update, and a repaint re-renders every line.
Here each line of markup is parsed and rendered on its own, kept until its text
changes, and only the changed lines are asked to repaint. Each line is rendered by
Textual's own path (`Visual.to_strips`, numbered as in the whole text, so selection
offsets match), so it draws exactly what the Static would; while text is selected the
whole text is drawn the Static way. Each line's markup must close its own tags.
A line of plain printable ASCII that fits (the process rows) needs none of the
formatting: its Strip is the one segment Textual would make, built directly.
"""

from __future__ import annotations

import re
from typing import Any

from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, VisualType
from textual.widgets import Static

from widgets.line_repaint import repaint_rows
from widgets.plain_lines import PlainLines, style_key

# Printable ASCII without markup ([ ] \\), not blank at either end: drawn as it is.
_PLAIN_LINE = re.compile(r"[!-Z^-~](?:[ -Z^-~]*[!-Z^-~])?")


class _LineAt(Content):
    """One line of the text, drawn as line `y` of the whole text would be.

    Its segments carry their offsets in the whole text (for selection), which Textual
    takes from the line's number while formatting; drawing the line after y blank
    lines did the same at the cost of formatting the blank lines too.
    """

    def __init__(self, line: Content, y: int) -> None:
        super().__init__(line.plain, list(line.spans), line.cell_length)
        self._line_y = y

    def _wrap_and_format(self, width: int, *args: Any, **kwargs: Any) -> list[Any]:
        lines = super()._wrap_and_format(width, *args, **kwargs)
        for formatted in lines:
            formatted.y += self._line_y
        return lines


class LineStatic(Static):
    """A Static for markup that changes a few lines at a time (`show_markup`)."""

    def __init__(self, content: VisualType = "", *, id: str | None = None) -> None:
        super().__init__(content, id=id)
        self._lines: list[str] | None = None  # the markup's lines, when show_markup drew it
        self._whole: Content | None = None  # the whole text parsed, for render() and layout
        self._strips_of: dict[tuple[str, int], list[Strip]] = {}  # (line, line number)
        self._rows: list[Strip] = []  # the drawn rows, wrapped lines included
        self._rendered_for: tuple[int, Style] | None = None  # the width and style of _rows
        self._blank = Strip.blank(0)
        self._blank_style: Style | None = None  # the style _blank was drawn in
        self._link_style: RichStyle | None = None
        self._plain = PlainLines()
        self._link_style_key: tuple[int, ...] = ()
        # The base style with each row's selection offset, kept while the base style stays:
        # Textual builds (and pickles the meta of) a new Rich style on each call.
        self._offset_styles: dict[int, RichStyle] = {}
        self._offset_styles_of: Style | None = None

    @property
    def link_style(self) -> RichStyle:
        # Textual asks for it on every line rendered (it walks the ancestors' backgrounds);
        # the lines here are rendered one at a time, so it is kept until a style changes.
        key = style_key(self)
        if key != self._link_style_key or self._link_style is None:
            self._link_style_key, self._link_style = key, super().link_style
        return self._link_style

    @property
    def visual(self) -> Visual:
        if self._lines is None:
            return super().visual
        if self._whole is None:
            self._whole = Content.from_markup("\n".join(self._lines))
        return self._whole

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        self._lines, self._rendered_for = None, None
        super().update(content, layout=layout)

    def show_markup(self, markup: str) -> None:
        """Show markup; repaint only the rows whose line changed."""
        lines = markup.split("\n")
        if lines == self._lines:
            return
        drawn = self._lines is not None and self._rendered_for is not None
        self._lines, self._whole = lines, None
        if not drawn or not self.is_mounted or self.text_selection is not None:
            self._rendered_for = None
            self.refresh(layout=self._auto_height())  # a fixed height: no screen-wide layout
            return
        assert self._rendered_for is not None
        old = self._rows
        self._render_rows(*self._rendered_for)
        new = self._rows
        if len(old) != len(new) and self._auto_height():
            self.refresh(layout=True)  # an auto height follows the number of rows
            return
        changed = [
            y
            for y in range(max(len(old), len(new)))
            if y >= len(old) or y >= len(new) or old[y] is not new[y]
        ]
        if changed:  # refresh() with no region would repaint the whole widget
            top, width = self.styles.gutter.top, self.outer_size.width
            repaint_rows(self, (top + y for y in changed), width)

    def _auto_height(self) -> bool:
        height = self.styles.height
        return height is None or height.is_auto

    def _render_rows(self, width: int, style: Style) -> None:
        """Rows from each line's Strips, rendering only lines not drawn at this place before."""
        assert self._lines is not None
        kept = self._strips_of
        fresh: dict[tuple[str, int], list[Strip]] = {}
        rows: list[Strip] = []
        plain_fits = self._plain_lines_drawn_as_is()
        if style != self._offset_styles_of:
            self._offset_styles, self._offset_styles_of = {}, style
        offset_styles = self._offset_styles
        for y, line in enumerate(self._lines):
            key = (line, y)
            strips = kept.get(key)
            if strips is None:
                strips = fresh.get(key)
            if strips is None:
                if plain_fits and len(line) <= width and _PLAIN_LINE.fullmatch(line):
                    # what Textual's formatting gives a plain line that fits: one segment
                    # in the base style, carrying its offset for selection
                    offset_style = offset_styles.get(y)
                    if offset_style is None:
                        offset_style = offset_styles[y] = style.rich_style_with_offset(0, y)
                    segment = Segment(line, offset_style)
                    strips = [Strip([segment], len(line))]
                else:
                    content = _LineAt(Content.from_markup(line), y)
                    strips = Visual.to_strips(self, content, width, None, style)
            fresh[key] = strips
            rows.extend(strips)
        self._strips_of, self._rows = fresh, rows

    def _plain_lines_drawn_as_is(self) -> bool:
        """Whether a plain line that fits is drawn unchanged (no alignment, padding or wrap rule)."""
        styles = self.styles
        return (
            self.text_selection is None
            and styles.text_align in ("left", "start")
            and styles.line_pad == 0
            and styles.content_align == ("left", "top")
            and not styles.has_rule("text_wrap")
            and not styles.has_rule("text_overflow")
        )

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._lines is None:
            return super().render_lines(crop)
        width, style = self.size.width, self.visual_style
        if self.text_selection is not None:  # the Static way: selection spans whole lines
            self._rows = Visual.to_strips(self, self.visual, width, None, style)
            self._rendered_for, self._strips_of = None, {}
        elif self._rendered_for != (width, style):
            self._strips_of = {}
            self._render_rows(width, style)
            self._rendered_for = (width, style)
        if self._blank.cell_length != width or self._blank_style != style:
            self._blank, self._blank_style = Strip.blank(width, style.rich_style), style
        self._plain.update(self)
        strips = self._plain.render(self, crop)  # a changed line without Textual's pass
        return super().render_lines(crop) if strips is None else strips

    def render_line(self, y: int) -> Strip:
        if self._lines is None:
            return super().render_line(y)
        return self._rows[y] if y < len(self._rows) else self._blank
