"""TuneView: a running tune drawn from its snapshot: each configuration's state, the run's words,
the ranked table once it is over. A pure view: it is handed a TuneSnapshot and draws it."""

from __future__ import annotations

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
        configs = Text()
        width = max((len(c.name) for c in snapshot.configs), default=0)
        for config in snapshot.configs:
            configs.append(f"{config.name.ljust(width)}  ")
            configs.append(state_words(config).ljust(14), style=STYLES.get(config.state, ""))
            if config.detail:
                configs.append(f"  {config.detail}", style="dim")
            configs.append("\n")
        if snapshot.cancelling:
            configs.append("cancelling: stopping the load and restoring the unit...", "bold yellow")
        self.query_one("#tune-configs", Static).update(configs)
        self.query_one("#tune-log", Static).update("\n".join(snapshot.lines[-LOG_LINES:]))
        self.query_one("#tune-result", Static).update("\n".join(snapshot.result))
