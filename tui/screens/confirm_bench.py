"""Confirmation for a benchmark on a fleet host: where, which preset, what load. It only asks."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from tui.fleet.bench_action import BenchPlan
from tui.screens.dialog import YesNoDialog


class ConfirmBenchScreen(YesNoDialog):
    def __init__(self, plan: BenchPlan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        table.add_row("Host", self.plan.host_label)
        table.add_row("Server", f"{self.plan.base_url} (through the host's SSH forward)")
        table.add_row("Preset", self.plan.preset)
        table.add_row("Load", self.plan.workload)
        with Vertical(classes="dialog-frame"):
            yield Label(f"Benchmark {self.plan.host}?", id="confirm-title", markup=False)
            yield Static(table)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Benchmark", variant="warning", id="confirm-yes")
                yield Button("Cancel", id="confirm-no")
