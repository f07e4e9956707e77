"""Update a Static's text without a screen-wide layout when its size cannot change.

`Static.update` asks for a layout by default, and a layout makes Textual recompose
and repaint every widget on the screen (the log included): on a console that
changes a few lines every second that was most of its CPU time. A new text with
the same number of lines, none wider than the widget, keeps an auto-height widget
the same size, so repainting the widget alone is enough.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from rich.text import Text
from textual.content import Content
from textual.widgets import Static

# The line widths each widget shows now (kept here so no widget needs a new attribute).
_shown_widths: WeakKeyDictionary[Static, list[int]] = WeakKeyDictionary()


def update_static(widget: Static, content: str | Text) -> None:
    """widget.update(content), with a layout only when its height may change.

    Markup is parsed here once, by Textual's own parser (what Static would do), and
    the parsed Content is handed over, so measuring the lines costs no second parse.
    """
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
