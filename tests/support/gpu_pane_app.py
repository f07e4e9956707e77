"""A small app that shows one GpuPane with a given snapshot (for Pilot and SVG snapshot tests)."""

from __future__ import annotations

from collections.abc import Mapping

from textual.app import App, ComposeResult

from tui.gpu.history import GpuTrend
from tui.gpu.model import GpuBoxSnapshot
from tui.health.badge import GpuBadge
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable


class GpuPaneApp(App[None]):
    """Mounts a GpuPane and feeds it the snapshot it was built with."""

    def __init__(
        self,
        snapshot: GpuBoxSnapshot,
        trends: Mapping[int, GpuTrend] | None = None,
        table_class: type[GpuTable] = GpuTable,
        badges: Mapping[int, GpuBadge] | None = None,
    ) -> None:
        super().__init__()
        self.badges = badges or {}
        self.snapshot = snapshot
        self.trends = trends or {}
        self.table_class = table_class

    def compose(self) -> ComposeResult:
        yield GpuPane(id="gpus", table_class=self.table_class)

    def on_mount(self) -> None:
        pane = self.query_one(GpuPane)
        pane.update_view(self.snapshot, self.trends)
        if self.badges:
            pane.set_health(self.badges)
        pane.query_one("#gpu-table").focus()
