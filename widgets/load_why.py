"""One line under the load strip: why the load is slow right now, then its diagnosis.

Draws a tui.serving.load.live.LiveLoad as given (its text is composed by the source); hidden
until the first reading, so a console that sees no load keeps its layout.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.serving.load.live import LiveLoad
from widgets.quiet_update import update_static

_BOUND_STYLES = {"io": "bold yellow", "cpu": "bold cyan", "wait": "bold magenta"}


def render_why(live: LiveLoad) -> Text:
    """The line; a pure function so it can be tested without an app."""
    text = Text()
    if live.final:
        text.append(" load ", style="bold green" if live.phase == "serving" else "bold red")
        text.append(f" {live.text}")
        return text
    text.append(" why ", style=_BOUND_STYLES.get(live.bound, "bold"))
    text.append(f" {live.text}", style="yellow" if live.problem else "")
    return text


class LoadWhy(Static):
    DEFAULT_CSS = "LoadWhy { height: auto; max-height: 2; }"

    def __init__(self, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.live: LiveLoad | None = None
        self.display = False

    def show(self, live: LiveLoad | None) -> None:
        self.live = live
        self.display = live is not None
        if live is not None:
            update_static(self, render_why(live))
