"""The service log pane: a bounded, filterable, searchable view over Textual's `Log`.

Callers hand it batches of LogLine; it buffers them and writes to the `Log`
about ten times a second, so a flood of lines costs one refresh per tick.
"""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import re
import textwrap
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any, ClassVar, Final, Self, overload

from rich.highlighter import Highlighter
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Log, Static

from tui.logs.line import LEVEL_RANK, Level, LineBatch, LineEntry, LogLine, strip_ansi
from widgets.keys import bindings_for
from widgets.sure_timer import set_sure_timer

FILTERS = {"all": Level.DEBUG, "warnings": Level.WARNING, "errors": Level.ERROR}
_FILTER_NAMES = {"warnings": "warnings and errors", "errors": "errors only"}
_LEVEL_STYLES = (
    # `\b` before `\w+`: one try per word, so a 1 MB word is read once, not once per char
    (re.compile(r"\b(ERROR|CRITICAL|Traceback)\b|\b\w+Error\b"), "bold red"),
    (re.compile(r"\bWARN(?:ING)?\b|\b\w+Warning\b"), "yellow"),
    (re.compile(r"\bDEBUG\b"), "dim"),
)


# A match of each level pattern holds one of these words: a line without them is not
# searched with the pattern (its \w+ tries every word of a line; ~25 us a line for the three)
_LEVEL_WORDS = (("ERROR", "CRITICAL", "Traceback", "Error"), ("WARN", "Warning"), ("DEBUG",))
_SEARCH_STYLE = "black on yellow"
_Span = tuple[int, int, str]


class LogHighlighter(Highlighter):
    """Colours levels and marks the current search term."""

    def __init__(self) -> None:
        self.search: re.Pattern[str] | None = None

    def spans(self, plain: str) -> list[_Span]:
        """(start, end, style) of each level word and search match, in the order they are
        applied; an empty match is left out (Text.stylize ignores it)."""
        out: list[_Span] = []
        for (pattern, style), words in zip(_LEVEL_STYLES, _LEVEL_WORDS, strict=True):
            if any(word in plain for word in words):
                out.extend((m.start(), m.end(), style) for m in pattern.finditer(plain))
        if self.search is not None:
            out.extend((m.start(), m.end(), _SEARCH_STYLE) for m in self.search.finditer(plain))
        return [span for span in out if span[1] > span[0]]

    def highlight(self, text: Text) -> None:
        for start, end, style in self.spans(text.plain):
            text.stylize(style, start, end)


# Lines written to the view per turn of the event loop: as many as the console drains in a
# turn. Each chunk costs a turn, a refresh and a scroll (~0.1 ms): chunks of 500 cost a
# flood ~0.5 us a line; a 2,000-line write takes ~2 ms now that a plain batch is written
# and measured in one pass (it took ~90 ms in the stock Log).
FLUSH_CHUNK_LINES = 2000
# A buffered line is kept as a plain tuple of its fields: a tuple of strings and numbers is
# dropped from the garbage collector's lists, so a full collection in a flood no longer walks
# the 50,000 lines of the buffer (15-40 ms each time as LogLine objects).
_FIELDS = tuple(field.name for field in dataclasses.fields(LogLine))
_entry = operator.attrgetter(*_FIELDS)
# an entry's fields by position (literals, so each reads as its field's type)
_TEXT: Final = 0
_TIMESTAMP: Final = 1
_LEVEL: Final = 3
assert (_FIELDS[_TEXT], _FIELDS[_TIMESTAMP], _FIELDS[_LEVEL]) == ("text", "timestamp_s", "level")


class LineBuffer(Sequence[LogLine]):
    """The pane's buffer read as LogLines (each built anew from its stored fields)."""

    def __init__(self, entries: deque[LineEntry]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> LogLine: ...
    @overload
    def __getitem__(self, index: slice) -> list[LogLine]: ...
    def __getitem__(self, index: int | slice) -> LogLine | list[LogLine]:
        if isinstance(index, slice):
            return [LogLine(*entry) for entry in list(self._entries)[index]]
        return LogLine(*self._entries[index])

    def __iter__(self) -> Iterator[LogLine]:
        return (LogLine(*entry) for entry in self._entries)


MAX_SHOWN_CHARS = 8192  # of one line; a 1 MB line must not stall the console


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


class LogPane(Vertical):
    """Follow mode pauses when the operator scrolls up and resumes on End."""

    DEFAULT_CSS = """
    LogPane { height: 1fr; }
    LogPane > Log { height: 1fr; }
    LogPane > Input { dock: bottom; display: none; }
    LogPane > Input.-active { display: block; }
    LogPane > #log-status { dock: bottom; height: 1; display: none; background: $panel; }
    LogPane > #log-status.-shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(bindings_for("log"))

    follow: reactive[bool] = reactive(True)
    level_filter: reactive[str] = reactive("all")
    wrap: reactive[bool] = reactive(False)
    show_timestamps: reactive[bool] = reactive(False)

    def __init__(
        self,
        *,
        max_lines: int = 50_000,
        flush_interval_s: float = 0.1,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.max_lines = max_lines
        self.flush_interval_s = flush_interval_s
        self._entries: deque[LineEntry] = deque(maxlen=max_lines)
        self.buffer = LineBuffer(self._entries)
        self._flush_scheduled = False
        self._chunk_queued = False  # the next chunk of a flush waits for the event loop
        self._pending: list[LineEntry] = []  # queued lines, as the buffer keeps them
        self._highlighter = LogHighlighter()
        self._matches: list[int] = []
        self._match_index = -1
        self.search_text = ""
        self.search_error: str | None = None
        self._shown_entries = 0  # buffer lines the level filter lets through
        self._holding_follow = False
        self._view: LogView | None = None

    def compose(self) -> ComposeResult:
        log = LogView(max_lines=self.max_lines, highlight=True, auto_scroll=True)
        log.highlighter = self._highlighter
        log.can_focus = True
        self._view = log
        yield log
        yield Static("", id="log-status")
        yield Input(placeholder="search (regex)", id="log-search")

    @property
    def log_view(self) -> Log:
        """The pane's view (kept from compose: a DOM query per flush chunk cost ~20 us)."""
        if self._view is None:
            self._view = self.query_one(LogView)
        return self._view

    def on_mount(self) -> None:
        self.watch(self.log_view, "scroll_y", self._scrolled, init=False)

    # ---- feeding --------------------------------------------------------
    def add_lines(self, lines: Iterable[LogLine]) -> None:
        """Queue a batch; it is drawn at the next flush tick (no timer runs while idle)."""
        self._pending.extend(
            lines.entries() if isinstance(lines, LineBatch) else map(_entry, lines)
        )
        if len(self._pending) >= FLUSH_CHUNK_LINES and not self._chunk_queued:
            # a flood: drawn a chunk a turn from the next one, not after the flush tick (in
            # its 0.1 s a flood's queue outgrew the buffer, and lines went undrawn)
            self._chunk_queued = True
            self.call_later(self._next_chunk)
        elif self._pending and not self._flush_scheduled:
            self._flush_scheduled = True
            set_sure_timer(self, self.flush_interval_s, self._scheduled_flush)
        if len(self._pending) > self.max_lines:
            del self._pending[: len(self._pending) - self.max_lines]

    def _visible_count(self, lines: Sequence[LineEntry]) -> int:
        """How many pass the level filter (the filter read once, not once per line)."""
        threshold = LEVEL_RANK[FILTERS[self.level_filter]]
        if threshold <= min(LEVEL_RANK.values()):  # "all": every line, none looked at
            return len(lines)
        rank = LEVEL_RANK.get
        return sum(1 for line in lines if rank(line[_LEVEL], 1) >= threshold)

    def _format(self, lines: Sequence[LineEntry]) -> list[str]:
        out: list[str] = []
        width = max(20, self.log_view.scrollable_content_region.width - 1)
        # Reactives read once per batch: each read costs more than the rest of a line.
        threshold = LEVEL_RANK[FILTERS[self.level_filter]]
        rank = LEVEL_RANK.get
        stamps, wrap = self.show_timestamps, self.wrap
        if threshold == 0 and not stamps and not wrap:
            # Every line shown as it is: one search of the joined batch says whether any
            # line needs its escapes cut, is long or holds more than one row; if none does,
            # the rows are the lines' texts themselves (no copy of each line).
            texts = [line[_TEXT] for line in lines]
            joined = "\n".join(texts)
            if "\x1b" not in joined and max(map(len, texts), default=0) <= MAX_SHOWN_CHARS:
                if joined.count("\n") == len(texts) - 1:
                    return texts
                return joined.split("\n") if texts else []
        for line in lines:
            if rank(line[_LEVEL], 1) < threshold:
                continue
            text = line[_TEXT]
            if "\x1b" in text:
                text = strip_ansi(text)
            if len(text) > MAX_SHOWN_CHARS:  # the export keeps the whole line
                text = (
                    f"{text[:MAX_SHOWN_CHARS]}... [{len(text) - MAX_SHOWN_CHARS} more characters]"
                )
            stamp_s = line[_TIMESTAMP]
            if stamps and stamp_s is not None:
                text = time.strftime("%H:%M:%S ", time.localtime(stamp_s)) + text
            if wrap and len(text) > width:
                out.extend(textwrap.wrap(text, width, replace_whitespace=False) or [""])
            else:
                out.extend(text.split("\n"))
        return out

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        self.flush()

    def flush(self) -> None:
        """Draw queued lines in chunks, yielding to the event loop between chunks.

        One write holds the loop for its whole length: a flood's queue is written
        FLUSH_CHUNK_LINES at a time, one chunk a turn (lag p99 ~10 ms in a 1M-line flood).
        """
        if not self._pending:
            return
        batch = self._pending[:FLUSH_CHUNK_LINES]
        del self._pending[:FLUSH_CHUNK_LINES]
        self._entries.extend(batch)
        self._shown_entries = min(
            len(self.buffer), self._shown_entries + self._visible_count(batch)
        )
        texts = self._format(batch)
        if texts:
            self.log_view.write_lines(texts, scroll_end=self.follow)
        if self.level_filter != "all" or self.search_text:
            self._show_status()
        if self._pending and not self._chunk_queued:
            self._chunk_queued = True
            self.call_later(self._next_chunk)

    async def _next_chunk(self) -> None:
        """The next chunk once the event loop has run: call_later alone does not yield to it
        (Textual's message loop takes a queued callback at once), so a flood's chunks ran
        as one turn of ~40 ms every flush."""
        await asyncio.sleep(0)
        self._chunk_queued = False
        self.flush()

    def _take_all_pending(self) -> None:
        """Move every queued line into the buffer without drawing it (a redraw follows)."""
        self._entries.extend(self._pending)
        self._pending = []

    def _rerender(self) -> None:
        """Redraw the whole buffer (filter, wrap, times changed); follow mode is kept.

        Clearing the Log scrolls it to the top, which would read as the operator
        scrolling up: hold the follow state until the redraw has settled.
        """
        self._take_all_pending()
        following = self.follow
        self._holding_follow = True
        log = self.log_view
        log.clear()
        entries = list(self._entries)
        self._shown_entries = self._visible_count(entries)
        log.write_lines(self._format(entries), scroll_end=following)
        if self.search_text:
            self._find(self.search_text)
        self._show_status()

        def settle() -> None:
            self._holding_follow = False
            self.follow = following
            if following:
                log.scroll_end(animate=False)

        self.call_after_refresh(settle)

    # ---- follow ---------------------------------------------------------
    def _scrolled(self, old_y: float, new_y: float) -> None:
        """Only a move up is the operator's; reaching the end again resumes following."""
        if self._holding_follow:
            return
        log = self.log_view
        at_end = new_y >= log.max_scroll_y - 1
        if new_y < old_y - 0.5 and not at_end and self.follow:
            self.follow = False
        elif at_end and not self.follow and log.max_scroll_y > 0:
            self.follow = True

    def on_resize(self) -> None:
        """A shrinking pane leaves the view short of the end, and Textual's Log then stops
        following for good (it only scrolls when already at the end): catch up here."""
        if self.follow:
            self.call_after_refresh(self.log_view.scroll_end, animate=False)

    def watch_follow(self, follow: bool) -> None:
        if self.is_mounted:
            self.log_view.auto_scroll = follow
            self._show_status()

    def action_follow(self) -> None:
        self.follow = True
        self.log_view.scroll_end(animate=False)

    # ---- filters and toggles ---------------------------------------------
    def action_cycle_filter(self) -> None:
        order = list(FILTERS)
        self.level_filter = order[(order.index(self.level_filter) + 1) % len(order)]

    def watch_level_filter(self) -> None:
        if self.is_mounted:
            self._rerender()

    def action_toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self._rerender()

    def action_toggle_timestamps(self) -> None:
        self.show_timestamps = not self.show_timestamps
        self._rerender()

    # ---- search ---------------------------------------------------------
    def action_open_search(self) -> None:
        box = self.query_one(Input)
        box.add_class("-active")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.remove_class("-active")
        self.log_view.focus()
        self.search(event.value)

    def search(self, text: str) -> int:
        """Highlight matches of the regex `text` and jump to the first; 0 on a bad regex."""
        self.search_text = text
        count = self._find(text)
        if count:
            self._match_index = -1
            self.action_next_match()
        self._show_status()
        return count

    def _find(self, text: str) -> int:
        self.search_error = None
        pattern: re.Pattern[str] | None = None
        if text:
            try:
                pattern = re.compile(text, re.IGNORECASE)
            except re.error as error:
                self.search_error = f"bad regex {text!r}: {error}"
        self._highlighter.search = pattern
        self._matches = (
            []
            if pattern is None
            else [i for i, line in enumerate(self.log_view.lines) if pattern.search(line)]
        )
        self.log_view.notify_style_update()
        self.log_view.refresh()
        return len(self._matches)

    def _jump(self, step: int) -> None:
        if not self._matches:
            self._show_status()
            return
        self._match_index = (self._match_index + step) % len(self._matches)
        self.follow = False
        y = self._matches[self._match_index]
        self.log_view.scroll_to(y=max(0, y - 2), animate=False)
        self._show_status()

    # ---- the status line -----------------------------------------------
    def status_text(self) -> str:
        """What the view hides or found, in one line; empty when it shows everything."""
        parts: list[str] = []
        total = len(self.buffer)
        if self.level_filter != "all":
            shown = self._shown_entries
            name = _FILTER_NAMES[self.level_filter]
            if shown == 0 and total:
                parts.append(f"filter {name}: none of {total:,} lines (f: all)")
            else:
                parts.append(f"filter {name}: {shown:,} of {total:,} lines (f: next)")
        if self.search_error:
            parts.append(self.search_error)
        elif self.search_text:
            count = len(self._matches)
            if not count:
                parts.append(f"/{self.search_text}: no match")
            else:
                at = f"{self._match_index + 1}/" if self._match_index >= 0 else ""
                parts.append(f"/{self.search_text}: {at}{count} match{'es' if count > 1 else ''}")
        if parts and not self.follow:
            parts.append("paused (End follows)")
        return "  ·  ".join(parts)

    def _show_status(self) -> None:
        if not self.is_mounted:
            return
        text = self.status_text()
        status = self.query_one("#log-status", Static)
        status.set_class(bool(text), "-shown")
        status.update(text)

    def action_next_match(self) -> None:
        self._jump(1)

    def action_previous_match(self) -> None:
        self._jump(-1)

    @property
    def current_match_line(self) -> int | None:
        if not self._matches or self._match_index < 0:
            return None
        return self._matches[self._match_index]

    # ---- export ---------------------------------------------------------
    def export_texts(self) -> list[str]:
        """The whole buffer (not just the filtered view) as plain text, for the app to write.

        The widget only draws: writing the file (and redacting it) is tui.logs.export's job.
        """
        self._take_all_pending()
        self._rerender()
        return [strip_ansi(line.text) for line in self.buffer]
