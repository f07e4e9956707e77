"""GpuPane: one row per GPU, grouped by NUMA node, with the selected GPU's processes.

A pure view: `update_view(snapshot, trends)` draws what it is given. Rows are
keyed (`gpu-3`, `numa-1`, `total`) and drawn by GpuTable, which repaints only the
rows whose text changed: an idle box costs a line or two per tick, not a redraw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widget import Widget
from textual.widgets import Static

from tui.core.formatting import duration_compact
from tui.gpu.history import GpuTrend
from tui.gpu.model import (
    GpuBoxSnapshot,
    GpuStatic,
)
from tui.health.badge import GpuBadge
from widgets import gpu_format as fmt
from widgets.gpu_rows import (
    _COMPACT,
    BADGE_STYLES,
    _gpu_cells,
    _Layout,
    _slowdown_cells,
    _total_cells,
    layout_for,
)
from widgets.gpu_table import GpuTable
from widgets.keys import bindings_for
from widgets.line_static import LineStatic
from widgets.table_cells import TableRow


class GpuPane(Widget):
    """Per-GPU memory, utilization, power and PCIe; `t` toggles the topology view."""

    DEFAULT_CSS = """
    GpuPane { height: 1fr; layout: vertical; }
    GpuPane > #gpu-message { height: 1fr; content-align: center middle; color: $warning; }
    GpuPane > GpuTable { height: auto; max-height: 70%; }
    GpuPane > #gpu-detail { height: 1fr; padding: 0 1; }
    GpuPane.topology > #gpu-detail { max-height: 100%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("gpu")

    def __init__(
        self,
        *,
        id: str | None = None,
        classes: str | None = None,
        table_class: type[GpuTable] = GpuTable,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._table_class = table_class
        self._snapshot: GpuBoxSnapshot | None = None
        self._trends: Mapping[int, GpuTrend] = {}
        self._badges: Mapping[int, GpuBadge] = {}
        self._layout: _Layout | None = None
        self._selected_gpu: int | None = None
        self._detail_text: str | None = None
        self._message_text: str | None = None
        self.show_topology = False

    def compose(self) -> ComposeResult:
        self._message = Static("", id="gpu-message")
        self._table = self._table_class(id="gpu-table")
        self._detail = LineStatic("", id="gpu-detail")
        yield self._message
        yield self._table
        yield self._detail

    def on_mount(self) -> None:
        self._message.display = False

    # -- public API ---------------------------------------------------------------

    def update_view(self, snapshot: GpuBoxSnapshot, trends: Mapping[int, GpuTrend]) -> None:
        self._snapshot, self._trends = snapshot, trends
        self._render_snapshot()

    def set_health(self, badges: Mapping[int, GpuBadge]) -> None:
        """Health marks per GPU index (tui.health.badge); redrawn only when they change."""
        if dict(badges) == dict(self._badges):
            return
        self._badges = dict(badges)
        self._render_snapshot()

    def action_toggle_topology(self) -> None:
        """The topology takes the table's place (8 GPUs need 12 lines): the table is hidden
        while it shows, and the focus, if the table had it, waits on the topology for `t`."""
        self.show_topology = not self.show_topology
        self.set_class(self.show_topology, "topology")
        table, detail = self._table, self._detail
        had_focus = table.has_focus or detail.has_focus
        detail.can_focus = self.show_topology
        if self._snapshot is not None and self._snapshot.available:
            table.display = not self.show_topology
        if had_focus:
            (detail if self.show_topology else table).focus()
        self._render_detail()

    # -- drawing ------------------------------------------------------------------

    def on_resize(self) -> None:
        layout = layout_for(self.size.width)
        if layout is not self._layout:
            self._layout = layout
            if self._snapshot is not None:
                self._render_snapshot()

    def _rows(self, snapshot: GpuBoxSnapshot, layout: _Layout) -> list[TableRow]:
        statics = {static.index: static for static in snapshot.statics}
        nodes = {statics[i].numa_node for i in statics}
        group_by_numa = len(nodes - {None}) >= 1 and len(snapshot.samples) > 1
        rows: list[TableRow] = []
        ordered = sorted(
            snapshot.samples,
            key=lambda s: (_numa_sort_key(statics.get(s.index)) if group_by_numa else 0, s.index),
        )
        current_node: object = object()
        for sample in ordered:
            static = statics.get(sample.index)
            node = static.numa_node if static else None
            if group_by_numa and node != current_node:
                current_node = node
                label = f"NUMA {node}" if node is not None else "NUMA ?"
                cells = {"name": f"[dim]── {label} ──[/]"}
                if not layout.compact and static and static.cpu_affinity:
                    cpus = fmt.clip(static.cpu_affinity, layout.columns[2].width - 5)
                    cells["memory"] = f"[dim]cpus {cpus}[/]"
                rows.append(TableRow(f"numa-{node}", cells, selectable=False))
            trend = self._trends.get(sample.index)
            badge = self._badges.get(sample.index)
            cells = _gpu_cells(static, sample, trend, layout, badge)
            rows.append(TableRow(f"gpu-{sample.index}", cells))
            slowed = _slowdown_cells(sample, trend, layout.compact)
            if slowed is not None:
                rows.append(TableRow(f"slow-{sample.index}", slowed, selectable=False))
        rows.append(TableRow("total", _total_cells(snapshot, layout), selectable=False))
        return rows

    def _render_snapshot(self) -> None:
        snapshot = self._snapshot
        if snapshot is None or not self.is_mounted:
            return
        message, table, detail = self._message, self._table, self._detail
        if not snapshot.available:
            text = escape(snapshot.error or "no GPUs")
            if text != self._message_text:  # the same error every tick: nothing to redraw
                self._message_text = text
                message.update(text)
            for widget, shown in ((message, True), (table, False), (detail, False)):
                _show(widget, shown)
            return
        for widget, shown in ((message, False), (table, not self.show_topology), (detail, True)):
            _show(widget, shown)
        layout = self._layout or _COMPACT
        table.set_rows(layout.columns, self._rows(snapshot, layout))
        if self._selected_gpu is not None and f"gpu-{self._selected_gpu}" in table.row_keys:
            table.move_cursor(f"gpu-{self._selected_gpu}")
        elif table.cursor_key is not None:
            self._selected_gpu = int(table.cursor_key.removeprefix("gpu-"))
        self._render_detail()

    def on_gpu_table_row_highlighted(self, event: GpuTable.RowHighlighted) -> None:
        self._selected_gpu = int(event.key.removeprefix("gpu-"))
        self._render_detail()

    def _render_detail(self) -> None:
        if self._snapshot is None or not self.is_mounted or not self._snapshot.available:
            return
        if self.show_topology:
            text = topology_text(self._snapshot, self.size.width - 2)
        else:
            text = processes_text(self._snapshot, self._selected_gpu, self.size.width)
            badge = self._badges.get(self._selected_gpu) if self._selected_gpu is not None else None
            if badge is not None and badge.mark:
                text = f"{health_line(badge, self.size.width)}\n{text}"
        if text != self._detail_text:
            self._detail.show_markup(text)
            self._detail_text = text


def health_line(badge: GpuBadge, width: int) -> str:
    """The selected GPU's health reasons, one line (the Health tab has them all)."""
    style = BADGE_STYLES.get(badge.severity, "bold")
    reasons = "; ".join(badge.reasons) or "see the Health tab (7)"
    text = fmt.clip(f"{reasons} · 7: Health", max(20, width - 14))
    return f"[{style}]health {badge.codes}[/] {text}"


def _show(widget: Widget, shown: bool) -> None:
    """Show or hide a widget only when that changes: each tick's write of the same value
    sets a style rule and walks Textual's style machinery for nothing."""
    if widget.display != shown:
        widget.display = shown


def _numa_sort_key(static: GpuStatic | None) -> int:
    return static.numa_node if static and static.numa_node is not None else 1 << 30


def processes_text(snapshot: GpuBoxSnapshot, gpu_index: int | None, width: int) -> str:
    """The selected GPU's processes: pid, user, GPU memory, age, command."""
    sample = next((s for s in snapshot.samples if s.index == gpu_index), None)
    if sample is None:
        return "[dim]select a GPU to see its processes · t: topology[/]"
    title = f"[b]GPU {sample.index} processes[/] [dim]· t: topology[/]"
    if sample.lost:
        return f"{title}\n[red]{escape(sample.error or 'GPU lost')}[/]"
    if not sample.processes:
        return f"{title}\n[dim]no processes[/]"
    lines = [title, f"[dim]{'PID':<8} {'USER':<10} {'GPU MEM':>9} {'AGE':>7}  COMMAND[/]"]
    command_width = max(10, width - 42)
    for proc in sorted(sample.processes, key=lambda p: -(p.used_memory_bytes or 0)):
        age = (
            duration_compact(snapshot.taken_at_s - proc.started_at_s)
            if proc.started_at_s is not None
            else "?"
        )
        memory = (
            f"{fmt.gib(proc.used_memory_bytes, 2)}G"
            if proc.used_memory_bytes is not None
            else "n/a"
        )
        lines.append(
            f"{proc.pid:<8} {escape(fmt.clip(proc.user or '?', 10)):<10} {memory:>9} {age:>7}  "
            f"{escape(fmt.clip(' '.join((proc.process_name or '?').split()), command_width))}"
        )
    return "\n".join(lines)


_LEGEND = (
    "X self · NV# NVLinks · PIX one PCIe switch · PXB several switches · "
    "PHB host bridge · NODE same NUMA node · SYS across NUMA nodes"
)
_SHORT_LEGEND = "NV# NVLinks, PIX 1 switch, PXB switches, PHB host, NODE/SYS same/other NUMA"


def topology_text(snapshot: GpuBoxSnapshot, width: int = 200) -> str:
    """The GPU x GPU matrix like `nvidia-smi topo -m`, with CPU and NUMA affinity, and
    one line of legend (a shorter one where the long one does not fit `width`)."""
    matrix = snapshot.topology
    if not matrix:
        return "[b]Topology[/] [dim]· t: processes[/]\n[dim]not reported by this source[/]"
    statics = {static.index: static for static in snapshot.statics}
    # a visible first cell: a line's leading blanks are dropped when drawn
    header = "·     " + "".join(f"{f'GPU{j}':>6}" for j in range(len(matrix)))
    lines = [
        "[b]Topology[/] [dim](nvidia-smi topo -m) · t: processes[/]",
        f"[dim]{header}  {'CPU Affinity':<16} NUMA[/]",
    ]
    for i, row in enumerate(matrix):
        static = statics.get(i)
        cpus = static.cpu_affinity if static and static.cpu_affinity else "n/a"
        numa = static.numa_node if static and static.numa_node is not None else "n/a"
        cells = "".join(f"{cell:>6}" for cell in row)
        lines.append(f"{f'GPU{i}':<6}{cells}  {escape(cpus):<16} {numa}")
    legend = _LEGEND if len(_LEGEND) <= width else _SHORT_LEGEND
    lines.append(f"[dim]{fmt.clip(legend, max(width, 20))}[/]")
    return "\n".join(lines)
