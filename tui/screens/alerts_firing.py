"""The "alerts firing now" view (A): what the alert monitor holds firing at this moment.

Toasts pass and the Timeline lists history; this answers "what is wrong right now":
each firing alert with its rule, severity, since when, the last value, and whether it
was acknowledged or muted. A snapshot of the engine's state when opened (r re-reads).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from rich.markup import escape
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.alerts.engine import FiringAlert
from tui.core.formatting import duration_compact
from tui.screens.dialog import Dialog
from widgets.keys import bindings_for

_SEVERITY_STYLES = {"critical": "bold white on red", "warning": "bold black on yellow"}


def firing_table(alerts: Sequence[FiringAlert], now_s: float) -> Table | Text:
    """One row per firing alert; a sentence when none fires."""
    if not alerts:
        return Text("No alert is firing now.", style="green")
    table = Table(expand=True, show_edge=False, pad_edge=False)
    table.add_column("Severity", no_wrap=True)
    table.add_column("Alert")
    table.add_column("Since", no_wrap=True)
    table.add_column("Value", justify="right", no_wrap=True)
    table.add_column("State", no_wrap=True)
    for alert in alerts:
        rule = alert.rule
        where = f" GPU {alert.gpu}" if alert.gpu is not None else ""
        what = f"[b]{escape(rule.name)}[/]{where}\n[dim]{escape(rule.condition)}[/]"
        since = time.strftime("%H:%M:%S", time.localtime(alert.since_s))
        held = duration_compact(max(0.0, now_s - alert.since_s))
        states = [
            word for word, on in (("acked", alert.acknowledged), ("muted", alert.muted)) if on
        ]
        table.add_row(
            Text(rule.severity, style=_SEVERITY_STYLES.get(rule.severity, "bold")),
            what,
            f"{since}\n[dim]for {held}[/]",
            f"{alert.value:g}" if math.isfinite(alert.value) else "n/a",
            ", ".join(states) or "[bold]firing[/]",
        )
    return table


class AlertsFiringScreen(Dialog[None]):
    """The alerts firing now, from the console's alert monitor."""

    DEFAULT_CSS = """
    AlertsFiringScreen > .dialog-frame { width: 96%; max-width: 110; padding: 0 1; }
    AlertsFiringScreen #alerts-firing-title { text-style: bold; margin-bottom: 1; }
    """
    BINDINGS = bindings_for("alerts")

    def __init__(self, read: Callable[[], Sequence[FiringAlert]] | None, why_none: str) -> None:
        """`read`: the monitor's firing alerts now; None when no monitor runs (`why_none`)."""
        super().__init__()
        self._read = read
        self._why_none = why_none

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog-frame"):
            yield Static("Alerts firing now", id="alerts-firing-title")
            yield Static("", id="alerts-firing-table")
            yield Static("[dim]r re-read · Escape close · the Timeline (T) has the history[/]")

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        shown: Table | Text
        if self._read is None:
            shown = Text(self._why_none, style="yellow")
        else:
            shown = firing_table(self._read(), time.time())
        self.query_one("#alerts-firing-table", Static).update(shown)
