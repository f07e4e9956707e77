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
from textual.widgets import Static

# The line widths each widget shows now (kept here so no widget needs a new attribute).
_shown_widths: WeakKeyDictionary[Static, list[int]] = WeakKeyDictionary()


def _line_widths(content: str | Text) -> list[int]:
    text = content if isinstance(content, Text) else Text.from_markup(content)
    return [line.cell_len for line in text.split("\n", allow_blank=True)]


def update_static(widget: Static, content: str | Text) -> None:
    """widget.update(content), with a layout only when its height may change."""
    widths = _line_widths(content)
    previous = _shown_widths.get(widget)
    _shown_widths[widget] = widths
    width = widget.content_region.width
    same_size = (
        previous is not None
        and widget.is_mounted
        and len(previous) == len(widths)
        and max(previous + widths, default=0) <= width
    )
    widget.update(content, layout=not same_size)
