"""GpuTable: a keyed table that repaints only the rows whose text changed.

A refresh of a GPU box changes a few numbers on a few rows. Textual's DataTable
re-renders every cell of every visible row whenever one cell changes, which was
most of what the console cost per tick; this table keeps each row as (text, style)
pieces (cells split once per value, see table_cells) and its drawn Strip, and asks
Textual to redraw only the changed lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import BindingType
from textual.color import Color
from textual.filter import LineFilter
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from widgets.keys import bindings_for
from widgets.line_repaint import repaint_rows
from widgets.plain_lines import PlainLines
from widgets.table_cells import (
    _CELL_CACHE_SIZE,
    CELL_PADDING,
    Line,
    Piece,
    TableColumn,
    TableRow,
    fit_pieces,
    markup_pieces,
    merged_pieces,
)


class GpuTable(Widget, can_focus=True):
    """Rows keyed by name; `set_rows` repaints only changed rows; the cursor skips headings."""

    DEFAULT_CSS = """
    GpuTable {
        background: $surface;
        color: $foreground;
        height: auto;
        &:focus { background-tint: $foreground 5%; }
        & > .gpu-table--header { text-style: bold; background: $panel; color: $foreground; }
        & > .gpu-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .gpu-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"gpu-table--header", "gpu-table--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("gpu-table")

    class RowHighlighted(Message):
        """The cursor moved onto a row (posted on moves, not on data updates)."""

        def __init__(self, table: GpuTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._columns: tuple[TableColumn, ...] = ()
        self._rows: list[TableRow] = []
        self._lines: list[Line] = []  # one per row, without the cursor style
        self._header_line: Line = ()
        self._line_width = 0  # cells of every line: the columns and their padding
        self._strips: dict[int, Strip] = {}  # drawn rows by index, the cursor's aside
        self._strips_for: tuple[int, Style] | None = None  # the width and style they have
        # The same rows drawn in the line filters' styles (render_filtered_line), and
        # what they were drawn for: width, row style, filters, background.
        self._filtered_strips: dict[int, Strip] = {}
        self._filtered_for: tuple[object, ...] | None = None
        # by the style a row is drawn over: a piece's style -> as drawn (filtered)
        self._filtered_styles: dict[Style, dict[Style | None, Style]] = {}
        self._filters: tuple[Sequence[LineFilter], Color] = ((), Color(0, 0, 0, 0))
        self._styles: tuple[Style, Style, Style] | None = None
        self._plain = PlainLines()  # the box's styles, and lines drawn without Textual's pass
        self._special: dict[str, tuple[object, Strip]] = {}  # header and cursor rows, drawn
        self._render_width: int | None = None  # the width while render_lines runs
        self._named_styles: dict[str, Style] = {}
        self._cursor_key: str | None = None
        self._first_row = 0  # rows above this scrolled out when the table is cut short
        self._cell_cache: dict[tuple[str, int], Line] = {}
        self.rows_repainted = 0  # rows the last set_rows re-rendered (for tests)

    # -- data -----------------------------------------------------------------------

    def set_rows(self, columns: Sequence[TableColumn], rows: Sequence[TableRow]) -> int:
        """Show rows; repaint only those whose cells changed. Returns how many were repainted."""
        columns = tuple(columns)
        same_columns = columns is self._columns or columns == self._columns  # is: no field compare
        shape_changed = not same_columns or [r.key for r in rows] != self.row_keys
        if shape_changed:
            self._columns, self._rows = columns, list(rows)
            self._line_width = sum(column.width + 2 * CELL_PADDING for column in columns)
            self._header_line = self._line({c.key: c.label for c in columns})
            self._lines = [self._line(row.cells) for row in rows]
            self._strips.clear()
            self._filtered_strips.clear()
            if self._cursor_key not in self.row_keys or not self._row(self._cursor_key).selectable:
                self._cursor_key = next((r.key for r in rows if r.selectable), None)
            self._keep_cursor_visible()
            self.refresh(layout=True)
            self.rows_repainted = len(rows)
            return self.rows_repainted
        changed = [index for index, row in enumerate(rows) if row.cells != self._rows[index].cells]
        for index in changed:
            self._rows[index] = rows[index]
            self._lines[index] = self._line(rows[index].cells)
            self._strips.pop(index, None)
            self._filtered_strips.pop(index, None)
        self._refresh_rows(changed)
        self.rows_repainted = len(changed)
        return self.rows_repainted

    @property
    def row_keys(self) -> list[str]:
        return [row.key for row in self._rows]

    @property
    def column_keys(self) -> list[str]:
        return [column.key for column in self._columns]

    def cell(self, row_key: str, column_key: str) -> str:
        """The markup shown in one cell ("" when the row has nothing in that column)."""
        return self._row(row_key).cells.get(column_key, "")

    @property
    def cursor_key(self) -> str | None:
        return self._cursor_key

    def move_cursor(self, key: str) -> None:
        """Put the cursor on a selectable row and tell the parent."""
        if key == self._cursor_key or key not in self.row_keys or not self._row(key).selectable:
            return
        old_index = self.row_keys.index(self._cursor_key) if self._cursor_key else None
        self._cursor_key = key
        if self._keep_cursor_visible():
            self.refresh()
        else:
            changed = [self.row_keys.index(key)]
            self._refresh_rows(changed if old_index is None else [old_index, *changed])
        self.post_message(self.RowHighlighted(self, key))

    # -- keys and mouse ---------------------------------------------------------------

    def _step(self, direction: int) -> None:
        keys = [row.key for row in self._rows if row.selectable]
        if not keys:
            return
        if self._cursor_key not in keys:
            self.move_cursor(keys[0])
            return
        position = keys.index(self._cursor_key) + direction
        self.move_cursor(keys[max(0, min(len(keys) - 1, position))])

    def action_cursor_up(self) -> None:
        self._step(-1)

    def action_cursor_down(self) -> None:
        self._step(1)

    def action_cursor_first(self) -> None:
        self._step(-len(self._rows))

    def action_cursor_last(self) -> None:
        self._step(len(self._rows))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        index = self._first_row + offset.y - 1
        if index < len(self._rows):
            self.move_cursor(self._rows[index].key)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self._keep_cursor_visible()

    # -- drawing ----------------------------------------------------------------------

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return self._line_width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return 1 + len(self._rows) if self._columns else 0

    def render_lines(self, crop: Region) -> list[Strip]:
        # The row styles walk the DOM (background tints of every ancestor): looked up again
        # only when a style changed. The size asks the compositor: read once per repaint.
        self._refresh_styles()
        self._render_width = self.size.width
        try:
            # A plain box's rows go to the line filters as they are; a row's Strip lives
            # until its text changes, so an unchanged row costs nothing.
            strips = self._plain.render(self, crop)
            return super().render_lines(crop) if strips is None else strips
        finally:
            self._render_width = None

    def _refresh_styles(self) -> None:
        """Look the row styles up again when any style they come from changed."""
        if not self._plain.update(self) and self._styles is not None:
            return
        self._styles = (
            self.rich_style,
            self.get_component_rich_style("gpu-table--header"),
            self.get_component_rich_style("gpu-table--cursor"),
        )

    def render_line(self, y: int) -> Strip:
        width = self.size.width if self._render_width is None else self._render_width
        base, header, cursor = self._line_styles()
        if y == 0 and self._columns:
            return self._special_strip("header", self._header_line, base + header, width, base)
        index = self._first_row + y - 1
        if not 0 <= index < len(self._lines):
            return Strip.blank(width, base)
        if self._rows[index].key == self._cursor_key:
            return self._special_strip("cursor", self._lines[index], base + cursor, width, base)
        if self._strips_for != (width, base):
            self._strips_for = (width, base)
            self._strips.clear()
        strip = self._strips.get(index)
        if strip is None:
            strip = self._strips[index] = self._strip(self._lines[index], base, width, base)
        return strip

    def render_filtered_line(
        self, y: int, filters: Sequence[LineFilter], background: Color
    ) -> Strip:
        """render_line(y) put through the line filters (for PlainLines).

        A data row is drawn straight in the filtered styles: the filters map each
        segment's style on its own, so each style is filtered once, not each row's
        segments every time the row changes.
        """
        width = self.size.width if self._render_width is None else self._render_width
        base, _, cursor = self._line_styles()
        index = self._first_row + y - 1
        if y == 0 or not 0 <= index < len(self._lines):
            strip = self.render_line(y)
            for line_filter in filters:
                strip = strip.apply_filter(line_filter, background)
            return strip
        drawn_for = (width, base, cursor, *filters, background)
        if self._filtered_for != drawn_for:
            self._filtered_for = drawn_for
            self._filtered_strips.clear()
            self._filtered_styles.clear()
            self._filters = (tuple(filters), background)
        line = self._lines[index]
        if self._rows[index].key == self._cursor_key:  # changes with its row: not kept
            return self._filtered_row(line, width, base + cursor)
        kept = self._filtered_strips.get(index)
        if kept is None:
            kept = self._filtered_strips[index] = self._filtered_row(line, width, base)
        return kept

    def _filtered_row(self, line: Line, width: int, under: Style) -> Strip:
        """What `_strip(line, under, width, base)` through the filters gives: the same
        runs, each styled by one lookup of its piece's style (over `under`, filtered)."""
        final = self._filtered_styles.get(under)
        if final is None:
            final = self._filtered_styles[under] = {}
        segments = [
            Segment(text, final.get(style) or self._filtered_style(final, under, style))
            for text, style in merged_pieces(line)
            if text
        ]
        if width > self._line_width:  # beyond the columns: the table's own style
            base, _, _ = self._line_styles()
            pad = self._filtered_style(self._filtered_styles.setdefault(base, {}), base, None)
            segments.append(Segment(" " * (width - self._line_width), pad))
        return self._fitted(segments, width)

    def _filtered_style(
        self, kept: dict[Style | None, Style], under: Style, style: Style | None
    ) -> Style:
        """A piece's style over `under`, as the line filters leave it (kept)."""
        filtered = kept.get(style)
        if filtered is None:
            filters, background = self._filters
            segments = [Segment(" ", under + style if style else under)]
            for line_filter in filters:
                segments = line_filter.apply(segments, background)
            filtered = kept[style] = segments[0].style or under
        return filtered

    def _line_styles(self) -> tuple[Style, Style, Style]:
        if self._styles is None:
            self._refresh_styles()
        assert self._styles is not None
        return self._styles

    def _special_strip(self, name: str, line: Line, under: Style, width: int, base: Style) -> Strip:
        """The header or the cursor's row, kept while its line, style and width stay."""
        key = (line, under, width, base)
        kept = self._special.get(name)
        if kept is not None and kept[0] == key:
            return kept[1]
        strip = self._strip(line, under, width, base)
        self._special[name] = (key, strip)
        return strip

    def _strip(self, line: Line, under: Style, width: int, base: Style) -> Strip:
        """A row as one Strip: each run of one style is one segment, styled over `under`."""
        segments = [
            Segment(text, under + style if style else under)
            for text, style in merged_pieces(line)
            if text
        ]
        if width > self._line_width:
            segments.append(Segment(" " * (width - self._line_width), base))
        return self._fitted(segments, width)

    def _fitted(self, segments: list[Segment], width: int) -> Strip:
        """The row's segments as a Strip of `width` cells (padded before, or cropped here)."""
        if width >= self._line_width:
            return Strip(segments, width)
        return Strip(segments, self._line_width).crop(0, width)

    def _line(self, cells: dict[str, str]) -> Line:
        line: list[Piece] = []
        for column in self._columns:
            line.extend(self._cell_pieces(cells.get(column.key, ""), column.width))
        return tuple(line)

    def _cell_pieces(self, markup: str, width: int) -> Line:
        """One padded cell as (text, style) pieces, built once per distinct value."""
        key = (markup, width)
        pieces = self._cell_cache.get(key)
        if pieces is None:
            if len(self._cell_cache) >= _CELL_CACHE_SIZE:
                self._cell_cache.clear()
            pad = (" " * CELL_PADDING, None)
            fitted = fit_pieces(markup_pieces(markup, self._style_named), width)
            # joined as _strip would join them, so a row's Strip loops over fewer pieces
            pieces = self._cell_cache[key] = merged_pieces((pad, *fitted, pad))
        return pieces

    def _style_named(self, name: str) -> Style:
        style = self._named_styles.get(name)
        if style is None:
            style = self._named_styles[name] = self.app.console.get_style(
                name, default=Style.null()
            )
        return style

    def _row(self, key: str | None) -> TableRow:
        return next(row for row in self._rows if row.key == key)

    def _refresh_rows(self, indices: Sequence[int]) -> None:
        """One repaint for all changed rows (none: an idle box asks Textual for nothing)."""
        if indices:
            width, height = self.size
            lines = (index - self._first_row + 1 for index in indices)
            repaint_rows(self, (y for y in lines if 1 <= y < height), width)

    def _keep_cursor_visible(self) -> bool:
        """Scroll the rows (the header stays) so the cursor shows; True when they moved."""
        visible_rows = self.size.height - 1
        if visible_rows < 1 or self._cursor_key is None:
            return False
        index = self.row_keys.index(self._cursor_key)
        first = min(self._first_row, index)
        first = max(first, index - visible_rows + 1)
        first = max(0, min(first, max(0, len(self._rows) - visible_rows)))
        if first == self._first_row:
            return False
        self._first_row = first
        return True
