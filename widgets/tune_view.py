"""TuneView: a running tune drawn from its snapshot: each configuration's state, the run's words,
the ranked table once it is over. A pure view: it is handed a TuneSnapshot and draws it."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from tui.core.formatting import duration_compact
from tui.tune.progress import ConfigState, TuneSnapshot

STYLES = {
    "planned": "dim",
    "starting": "cyan",
    "loading": "cyan",
    "benchmarking": "bold cyan",
    "done": "green",
    "failed": "red",
    "skipped": "yellow",
    "cancelled": "yellow",
}
LOG_LINES = 8
# Once the tune is over the ranked result is what matters: the run's last words only, so
# the table and its margin fit an 80x24 terminal.
LOG_LINES_OVER = 2


def state_words(config: ConfigState) -> str:
    """`loading (weights) 41 s, ETA 12 s`; an unknown ETA is said, never guessed."""
    if config.state != "loading":
        return config.state
    words = "loading" + (f" ({config.phase})" if config.phase else "")
    if config.loaded_s is not None:
        words += f" {duration_compact(config.loaded_s)}"
    eta = "unknown" if config.eta_s is None else duration_compact(config.eta_s)
    return f"{words}, ETA {eta}"


class TuneView(Vertical):
    """The configurations and their states, the last words of the run, the result."""

    DEFAULT_CSS = """
    TuneView { height: 1fr; }
    TuneView > #tune-configs { height: auto; padding: 0 1; }
    TuneView > #tune-log { height: auto; max-height: 10; padding: 0 1; color: $text-muted; }
    TuneView > #tune-result-scroll { height: 1fr; }
    TuneView #tune-result { padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="tune-configs", markup=False)
        yield Static(id="tune-log", markup=False)
        with VerticalScroll(id="tune-result-scroll"):
            yield Static(id="tune-result", markup=False)

    def show(self, snapshot: TuneSnapshot) -> None:
        # A grid: a long detail wraps in its own column, never under the names.
        configs = Table.grid(padding=(0, 2))
        configs.add_column(no_wrap=True)
        configs.add_column(no_wrap=True)
        configs.add_column(ratio=1)
        for config in snapshot.configs:
            state = Text(state_words(config), style=STYLES.get(config.state, ""))
            configs.add_row(Text(config.name), state, Text(config.detail, style="dim"))
        cancelling = Text("cancelling: stopping the load and restoring the unit...", "bold yellow")
        drawn = Group(configs, cancelling) if snapshot.cancelling else configs
        self.query_one("#tune-configs", Static).update(drawn)
        shown = LOG_LINES_OVER if snapshot.finished else LOG_LINES
        self.query_one("#tune-log", Static).update("\n".join(snapshot.lines[-shown:]))
        self.query_one("#tune-result", Static).update("\n".join(snapshot.result))

    def text_width(self) -> int:
        """The cells a result line has before it wraps here (the scroll bar's room kept)."""
        scroll = self.query_one("#tune-result-scroll", VerticalScroll)
        padding = self.query_one("#tune-result", Static).styles.padding
        return scroll.size.width - scroll.styles.scrollbar_size_vertical - padding.width
