"""Ask the screen to repaint a few lines of a widget, without Textual's message round trip.

`Widget.refresh(*regions)` marks the lines dirty, then asks the screen by messages: a
Prompt to the widget, whose idle handler posts an Update to the screen, whose handler
prompts the screen, whose idle handler starts the update timer. On a busy GPU box that
is three messages and as many task wake-ups for each tick's two changed rows, besides
dropping caches a changed line does not touch (the widget's size and styles stay).
Here the lines are marked dirty and the screen's update timer is started directly, as
its idle handler would; the compositor then draws them as before. Relies on Textual
internals, which is why Textual is pinned exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.dom import NoScreen
from textual.geometry import Region
from textual.screen import Screen
from textual.widget import Widget


def repaint_lines(widget: Widget, *regions: Region) -> None:
    """Repaint `regions` (in the widget's content coordinates) at the next screen update."""
    screen = _screen_of(widget)
    if screen is None:  # not on a shown screen: Textual's own path
        widget.refresh(*regions)
        return
    widget._set_dirty(*regions)
    if widget.display:  # as Widget._check_refresh: a hidden widget is drawn when shown
        screen._dirty_widgets.add(widget)
        screen._update_timer.resume()  # what Screen._on_idle does for a dirty widget


def repaint_rows(widget: Widget, rows: Iterable[int], width: int) -> None:
    """Repaint whole lines (content y), adjacent ones as one region: the cost is per region."""
    spans: list[list[int]] = []
    for y in sorted(set(rows)):
        if spans and spans[-1][1] == y:
            spans[-1][1] = y + 1
        else:
            spans.append([y, y + 1])
    if spans:
        repaint_lines(widget, *(Region(0, top, width, bottom - top) for top, bottom in spans))


def _screen_of(widget: Widget) -> Screen[object] | None:
    """The widget's screen, if both are mounted and running (None: use refresh())."""
    if not widget.is_mounted or widget._closing:
        return None
    try:
        screen = widget.screen
    except NoScreen:
        return None
    return screen if screen.is_mounted and screen._running else None
