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
    GpuSample,
    GpuStatic,
    throttle_labels,
    total_memory_bytes,
)
from tui.health.badge import GpuBadge
from widgets import gpu_format as fmt
from widgets.gpu_table import GpuTable, TableColumn, TableRow
from widgets.keys import bindings_for
from widgets.line_static import LineStatic

FULL_LAYOUT_MIN_WIDTH = 150  # narrower terminals get the compact columns
BADGE_STYLES = {"crit": "bold white on red", "warn": "bold black on yellow"}


_FULL_COLUMNS = (
    TableColumn("gpu", "GPU", 3),
    TableColumn("name", "Name", 18),
    TableColumn("memory", "Memory", 22),
    TableColumn("util", "Util", 15),
    TableColumn("temp", "Temp", 4),
    TableColumn("power", "Power", 10),
    TableColumn("pcie", "PCIe", 4),
    TableColumn("pcie_io", "TX/RX B/s", 11),
    TableColumn("procs", "Procs", 5),
    TableColumn("mem_hist", "Memory 5m", 12),
    TableColumn("util_hist", "Util 5m", 12),
    TableColumn("fill", "Filling", 14),
)
_COMPACT_COLUMNS = (
    TableColumn("gpu", "GPU", 3),
    TableColumn("name", "Name", 10),
    TableColumn("memory", "Memory", 15),
    TableColumn("util", "Util", 9),
    TableColumn("temp", "Temp", 4),
    TableColumn("power", "Power", 8),
    TableColumn("procs", "Pr", 2),
    TableColumn("fill", "Filling", 12),
)


def badge_cell(index: int, badge: GpuBadge | None) -> str:
    """The GPU number, and beside it the health mark (X, R, E, L, P, T) when there is one."""
    if badge is None or not badge.mark:
        return str(index)
    return f"{index}[{BADGE_STYLES.get(badge.severity, 'bold')}]{badge.mark}[/]"


def _gpu_cells(
    static: GpuStatic | None,
    sample: GpuSample,
    trend: GpuTrend | None,
    compact: bool,
    badge: GpuBadge | None = None,
) -> dict[str, str]:
    name_width = 10 if compact else 18
    name = fmt.short_gpu_name(static.name if static else "GPU", name_width)
    cells = {"gpu": badge_cell(sample.index, badge), "name": name}
    if sample.lost:
        cells["memory"] = "[bold red]LOST[/]"
        cells["util"] = fmt.clip(sample.error or "", 9 if compact else 15)
        return cells
    bar_width = 5 if compact else 10
    cells["memory"] = fmt.memory_cell(
        sample.memory_used_bytes, sample.memory_total_bytes, bar_width, 0 if compact else 1
    )
    cells["util"] = fmt.percent_cell(sample.utilization_gpu_pct, 4 if compact else 10)
    cells["temp"] = fmt.temperature_cell(sample.temperature_c)
    limit = sample.power_limit_w or (static.power_limit_w if static else None)
    cells["power"] = fmt.power_cell(sample.power_w, limit)
    cells["pcie"] = fmt.pcie_link_cell(
        sample.pcie_gen, sample.pcie_width, static.pcie_max_gen if static else None
    )
    cells["pcie_io"] = fmt.pcie_traffic_cell(sample.pcie_tx_bytes_per_s, sample.pcie_rx_bytes_per_s)
    cells["procs"] = str(len({p.pid for p in sample.processes}))
    if trend is not None:
        cells["mem_hist"] = f"[magenta]{fmt.sparkline(trend.memory_used_pct, 12)}[/]"
        cells["util_hist"] = f"[green]{fmt.sparkline(trend.utilization_pct, 12)}[/]"
        cells["fill"] = fmt.fill_cell(trend.memory_fill_bytes_per_s, trend.memory_rising)
    return cells


def _slowdown_cells(sample: GpuSample, compact: bool) -> dict[str, str] | None:
    """The row under a slowed GPU: its SM and memory clocks and why they are held down."""
    labels = throttle_labels(sample)
    if not labels:
        return None
    sm = "?" if sample.sm_clock_mhz is None else str(sample.sm_clock_mhz)
    clocks = f"SM {sm} MHz"
    if not compact:
        mem = "?" if sample.memory_clock_mhz is None else str(sample.memory_clock_mhz)
        clocks = f"SM {sm} mem {mem} MHz"
    return {
        "name": "[yellow]↳ slowed:[/]",
        "memory": f"[yellow]{fmt.clip(clocks, 15 if compact else 22)}[/]",
        "util": f"[yellow]{fmt.clip(', '.join(labels), 9 if compact else 15)}[/]",
    }


def _total_cells(snapshot: GpuBoxSnapshot, compact: bool) -> dict[str, str]:
    alive = [s for s in snapshot.samples if not s.lost]
    used, total = total_memory_bytes(alive)
    power = [s.power_w for s in alive if s.power_w is not None]
    limits = [s.power_limit_w for s in alive if s.power_limit_w is not None]
    utils = [s.utilization_gpu_pct for s in alive if s.utilization_gpu_pct is not None]
    lost = len(snapshot.samples) - len(alive)
    label = f"{len(snapshot.samples)} GPUs" + (f", {lost} lost" if lost else "")
    if compact and lost:
        label = f"{len(alive)}/{len(snapshot.samples)} GPUs"
    return {
        "gpu": "[b]Σ[/]",
        "name": f"[b]{fmt.clip(label, 10 if compact else 18)}[/]",
        "memory": fmt.memory_cell(used if total else None, total or None, 5 if compact else 10, 0),
        "util": fmt.percent_cell(sum(utils) / len(utils) if utils else None, 4 if compact else 10),
        "power": fmt.power_cell(
            sum(power) if power else None, sum(limits) if limits and not compact else None
        ),
        "procs": str(len({p.pid for p in snapshot.processes()})),
    }


class GpuPane(Widget):
    """Per-GPU memory, utilization, power and PCIe; `t` toggles the topology view."""

    DEFAULT_CSS = """
    GpuPane { height: 1fr; layout: vertical; }
    GpuPane > #gpu-message { height: 1fr; content-align: center middle; color: $warning; }
    GpuPane > GpuTable { height: auto; max-height: 70%; }
    GpuPane > #gpu-detail { height: 1fr; padding: 0 1; }
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
        self._compact: bool | None = None
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
        self.show_topology = not self.show_topology
        self._render_detail()

    # -- drawing ------------------------------------------------------------------

    def on_resize(self) -> None:
        compact = self.size.width < FULL_LAYOUT_MIN_WIDTH
        if compact != self._compact:
            self._compact = compact
            if self._snapshot is not None:
                self._render_snapshot()

    def _rows(self, snapshot: GpuBoxSnapshot, compact: bool) -> list[TableRow]:
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
                if not compact and static and static.cpu_affinity:
                    cells["memory"] = f"[dim]cpus {fmt.clip(static.cpu_affinity, 17)}[/]"
                rows.append(TableRow(f"numa-{node}", cells, selectable=False))
            trend = self._trends.get(sample.index)
            badge = self._badges.get(sample.index)
            cells = _gpu_cells(static, sample, trend, compact, badge)
            rows.append(TableRow(f"gpu-{sample.index}", cells))
            slowed = _slowdown_cells(sample, compact)
            if slowed is not None:
                rows.append(TableRow(f"slow-{sample.index}", slowed, selectable=False))
        rows.append(TableRow("total", _total_cells(snapshot, compact), selectable=False))
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
            message.display, table.display, detail.display = True, False, False
            return
        message.display, table.display, detail.display = False, True, True
        compact = self._compact if self._compact is not None else True
        table.set_rows(
            _COMPACT_COLUMNS if compact else _FULL_COLUMNS, self._rows(snapshot, compact)
        )
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
            text = topology_text(self._snapshot)
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


def topology_text(snapshot: GpuBoxSnapshot) -> str:
    """The GPU x GPU matrix like `nvidia-smi topo -m`, with CPU and NUMA affinity."""
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
    lines.append(
        "[dim]X self · NV# NVLinks · PIX one PCIe switch · PXB several switches · "
        "PHB host bridge · NODE same NUMA node · SYS across NUMA nodes[/]"
    )
    return "\n".join(lines)
