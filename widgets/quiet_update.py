"""Update a Static's text without a screen-wide layout when its size cannot change.

`Static.update` asks for a layout by default, and a layout makes Textual recompose
and repaint every widget on the screen (the log included): on a console that
changes a few lines every second that was most of its CPU time. A new text with
the same number of lines, none wider than the widget, keeps an auto-height widget
the same size, so repainting the widget alone is enough.
"""

from __future__ import annotations

from collections.abc import Hashable
from weakref import WeakKeyDictionary

from rich.text import Text
from textual.content import Content
from textual.widgets import Static

# The line widths each widget shows now (kept here so no widget needs a new attribute).
_shown_widths: WeakKeyDictionary[Static, list[int]] = WeakKeyDictionary()
# What each widget was last given through update_static: (a key of the text and its
# styles, the visual handed to the widget), so the same text again costs no repaint.
_shown: WeakKeyDictionary[Static, tuple[Hashable, object]] = WeakKeyDictionary()


def _key(content: str | Text) -> Hashable:
    """Equal keys draw the same: markup by its string, a Text by everything Rich reads."""
    if isinstance(content, str):
        return content
    return (
        content.plain,
        tuple(content.spans),
        str(content.style),
        content.justify,
        content.overflow,
        content.no_wrap,
        content.end,
        content.tab_size,
    )


def update_static(widget: Static, content: str | Text) -> None:
    """widget.update(content), with a layout only when its height may change.

    Markup is parsed here once, by Textual's own parser (what Static would do), and
    the parsed Content is handed over, so measuring the lines costs no second parse.
    The same text as last time, while the widget still shows it, is not drawn again:
    status lines are re-sent every second and mostly say the same.
    """
    key = _key(content)
    shown = _shown.get(widget)
    if shown is not None and shown[0] == key and widget.content is shown[1]:
        return
    visual: Content | Text = Content.from_markup(content) if isinstance(content, str) else content
    lines = visual.split("\n", allow_blank=True) if isinstance(visual, Text) else visual.split("\n")
    widths = [line.cell_len if isinstance(line, Text) else line.cell_length for line in lines]
    previous = _shown_widths.get(widget)
    _shown_widths[widget] = widths
    width = widget.content_region.width
    same_size = (
        previous is not None
        and widget.is_mounted
        and len(previous) == len(widths)
        and max(previous + widths, default=0) <= width
    )
    widget.update(visual, layout=not same_size)
    _shown[widget] = (key, visual)
