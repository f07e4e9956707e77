"""Table cells as (text, style) pieces: what a row is drawn from, built once per value.

The GPU pane describes its cells in Rich markup, and on a busy box most cells
change on every tick. Rich's markup parser and `Text.render` cost ~60 us a cell,
which for 8 GPUs was milliseconds per tick; the markup the pane writes is a flat
run of `[style]text[/]` and plain text, which is split here with one regular
expression. Anything else (nested tags, escapes, brackets in the text) goes
through Rich's parser, so the result is always what Rich would draw.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.style import Style
from rich.text import Text

Piece = tuple[str, Style | None]  # None: no style of its own (the row's style shows)
Line = tuple[Piece, ...]

# A flat run of `[tag]text[/]` and plain text; tags start like Rich's (a-z or #, no @meta).
# No backslash (escapes), no colon (Rich replaces :emoji: codes) and no "=" in a tag
# (link=... and other parameters are resolved by Rich) in the fast path.
_FLAT = r"\[([a-z#][^\[\]\\:=]*)\]([^\[\]\\:]*)\[/\]|([^\[\]\\:]+)"
_FLAT_MARKUP = re.compile(rf"(?:{_FLAT})*")
_FLAT_TOKEN = re.compile(_FLAT)
_MARKUP_CHAR = re.compile(r"[\[\]\\:]")  # none of these: the whole text is one plain token
_CONSOLE = Console()  # only to parse the markup Rich's way in the rare fallback


def markup_pieces(markup: str, style_named: Callable[[str], Style]) -> Line:
    """The pieces Rich would draw for this markup, without its parser for flat markup."""
    if not _MARKUP_CHAR.search(markup):  # plain text (the numbers): one unstyled piece
        return ((markup, None),) if markup else ()
    if _FLAT_MARKUP.fullmatch(markup):
        return tuple(
            (text, style_named(tag)) if tag else (plain, None)
            for tag, text, plain in _FLAT_TOKEN.findall(markup)
            if text or plain
        )
    text = Text.from_markup(markup, end="")
    return tuple(
        (segment.text, segment.style or None)
        for segment in text.render(_CONSOLE)
        if segment.text and not segment.control
    )


def merged_pieces(pieces: Line) -> Line:
    """Adjacent pieces of equal style as one, as a row's Strip joins them: done once a cell."""
    merged: list[Piece] = []
    for text, style in pieces:
        if merged:
            last_text, last_style = merged[-1]
            if style is last_style or (
                style is not None and last_style is not None and style == last_style
            ):
                merged[-1] = (last_text + text, last_style)
                continue
        merged.append((text, style))
    return tuple(merged)


def fit_pieces(pieces: Line, width: int) -> Line:
    """Exactly width cells: cropped like `Text.truncate(overflow="crop")`, padded with blanks."""
    fitted: list[Piece] = []
    used = 0
    for text, style in pieces:
        if used >= width:
            break
        size = cell_len(text)
        if used + size > width:
            text, size = set_cell_size(text, width - used), width - used
        fitted.append((text, style))
        used += size
    if used < width:
        fitted.append((" " * (width - used), None))
    return tuple(fitted)


@dataclass(frozen=True, slots=True)
class TableColumn:
    key: str
    label: str
    width: int


@dataclass(frozen=True, slots=True)
class TableRow:
    """One row: its key, the markup of each cell by column key, and whether the cursor may rest on it."""

    key: str
    cells: dict[str, str]
    selectable: bool = True


CELL_PADDING = 1  # blank cells on each side of a cell, as DataTable draws them
_CELL_CACHE_SIZE = 4096  # parsed cells kept; a tick changes a few, most repeat
