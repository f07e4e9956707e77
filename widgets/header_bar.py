"""The top line: profile, host route, connection state, and SIMULATED / READ-ONLY / browser badges."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

_STATE_STYLES = {
    "connecting": "bold yellow",
    "connected": "bold green",
    "reconnecting": "bold yellow",
    "unreachable": "bold red",
}


class HeaderBar(Static):
    """A pure view: the app sets its reactives; it never looks anything up."""

    DEFAULT_CSS = """
    HeaderBar {
        dock: top;
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    profile_name: reactive[str] = reactive("")
    route: reactive[str] = reactive("")
    connection_state: reactive[str] = reactive("connecting")
    connection_detail: reactive[str] = reactive("")
    countdown: reactive[str] = reactive("")  # "retry in 3 s" while reconnecting
    simulated: reactive[bool] = reactive(False)
    read_only: reactive[bool] = reactive(False)
    browser: reactive[bool] = reactive(False)  # served by `servedeck serve`

    def render(self) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("servedeck", style="bold")
        if self.simulated:
            line.append(" SIMULATED ", style="bold black on magenta")
        if self.browser:  # nobody at a browser may mistake what this page can do
            mode = "read-only" if self.read_only else "actions allowed"
            style = "bold black on yellow" if self.read_only else "bold white on red"
            line.append(f" browser, {mode} ", style=style)
        elif self.read_only:
            line.append(" READ-ONLY ", style="bold black on yellow")
        narrow = self.size.width < 120
        line.append(" │ " if narrow else " │ profile: ", style="dim")
        line.append(self.profile_name, style="bold cyan")
        line.append(" │ ", style="dim")
        line.append(
            f"● {self.connection_state}", style=_STATE_STYLES.get(self.connection_state, "")
        )
        if self.countdown:
            line.append(f" ({self.countdown})", style=_STATE_STYLES.get(self.connection_state, ""))
        line.append(" │ " if narrow else " │ host: ", style="dim")
        line.append(self.route)
        # The machine's own name, said as such (it read "connected vm │ host: local").
        detail = f" (hostname {self.connection_detail})"
        fits = line.cell_len + len(detail) <= self.size.width
        if self.connection_detail and fits and self.connection_detail not in self.route:
            line.append(detail, style="dim")
        return line
