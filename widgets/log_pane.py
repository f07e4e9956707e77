"""The service log pane: a bounded, filterable, searchable view over Textual's `Log`
(its copy, widgets/textual_log_copy.py).

Callers hand it batches of LogLine; it buffers them and writes to the `Log`
about ten times a second, so a flood of lines costs one refresh per tick.
"""

from __future__ import annotations

import asyncio
import re
import textwrap
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Input, Log, Static

from tui.logs.classify import strip_ansi
from tui.logs.line import LEVEL_RANK, Level, LineBatch, LineEntry, LogLine
from widgets.keys import bindings_for
from widgets.log_buffer import LEVEL_AT, TEXT_AT, TIMESTAMP_AT, LineBuffer, entry_of
from widgets.log_highlight import LogHighlighter
from widgets.sure_timer import set_sure_timer
from widgets.textual_log_copy import LogView

FILTERS = {"all": Level.DEBUG, "warnings": Level.WARNING, "errors": Level.ERROR}
_FILTER_NAMES = {"warnings": "warnings and errors", "errors": "errors only"}
# Lines written to the view per turn of the event loop: as many as the console drains in a
# turn. Each chunk costs a turn, a refresh and a scroll (~0.1 ms): chunks of 500 cost a
# flood ~0.5 us a line; a 2,000-line write takes ~2 ms now that a plain batch is written
# and measured in one pass (it took ~90 ms in the stock Log).
FLUSH_CHUNK_LINES = 2000
MAX_SHOWN_CHARS = 8192  # of one line; a 1 MB line must not stall the console


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
            lines.entries() if isinstance(lines, LineBatch) else map(entry_of, lines)
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
        return sum(1 for line in lines if rank(line[LEVEL_AT], 1) >= threshold)

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
            texts = [line[TEXT_AT] for line in lines]
            joined = "\n".join(texts)
            if "\x1b" not in joined and max(map(len, texts), default=0) <= MAX_SHOWN_CHARS:
                if joined.count("\n") == len(texts) - 1:
                    return texts
                return joined.split("\n") if texts else []
        for line in lines:
            if rank(line[LEVEL_AT], 1) < threshold:
                continue
            text = line[TEXT_AT]
            if "\x1b" in text:
                text = strip_ansi(text)
            if len(text) > MAX_SHOWN_CHARS:  # the export keeps the whole line
                text = (
                    f"{text[:MAX_SHOWN_CHARS]}... [{len(text) - MAX_SHOWN_CHARS} more characters]"
                )
            stamp_s = line[TIMESTAMP_AT]
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
