"""The GPU pane's table contents: its columns at each width (full, medium, compact) and
each row's cells (a GPU, its slowdown, the box's total), as GpuTable markup.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.gpu.history import SLOWDOWN_HOLD_S, GpuTrend
from tui.gpu.model import (
    GpuBoxSnapshot,
    GpuSample,
    GpuStatic,
    reason_labels,
    throttle_labels,
    total_memory_bytes,
)
from tui.health.badge import GpuBadge
from widgets import gpu_format as fmt
from widgets.table_cells import TableColumn

FULL_LAYOUT_MIN_WIDTH = 150  # the widest columns from here
MEDIUM_LAYOUT_MIN_WIDTH = 118  # from here (a 120-column terminal) TX/RX and the sparklines
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
_MEDIUM_COLUMNS = (
    TableColumn("gpu", "GPU", 3),
    TableColumn("name", "Name", 14),
    TableColumn("memory", "Memory", 15),
    TableColumn("util", "Util", 10),
    TableColumn("temp", "Temp", 4),
    TableColumn("power", "Power", 9),
    TableColumn("pcie_io", "TX/RX B/s", 11),
    TableColumn("procs", "Pr", 2),
    TableColumn("mem_hist", "Mem 5m", 8),
    TableColumn("util_hist", "Util 5m", 8),
    TableColumn("fill", "Filling", 10),
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


@dataclass(frozen=True, slots=True)
class _Layout:
    """One width class of the table: its columns and how wide each figure is drawn."""

    columns: tuple[TableColumn, ...]
    name_cells: int
    bar_cells: int  # memory bars
    util_bar_cells: int
    memory_digits: int
    spark_cells: int
    compact: bool


_FULL = _Layout(_FULL_COLUMNS, 18, 10, 10, 1, 12, False)
_MEDIUM = _Layout(_MEDIUM_COLUMNS, 14, 6, 5, 0, 8, False)
_COMPACT = _Layout(_COMPACT_COLUMNS, 10, 5, 4, 0, 0, True)


def layout_for(width: int) -> _Layout:
    """The widest layout whose columns fit `width` cells."""
    if width >= FULL_LAYOUT_MIN_WIDTH:
        return _FULL
    return _MEDIUM if width >= MEDIUM_LAYOUT_MIN_WIDTH else _COMPACT


def badge_cell(index: int, badge: GpuBadge | None) -> str:
    """The GPU number, and beside it the health mark (X, R, E, L, P, T) when there is one."""
    if badge is None or not badge.mark:
        return str(index)
    return f"{index}[{BADGE_STYLES.get(badge.severity, 'bold')}]{badge.mark}[/]"


def _gpu_cells(
    static: GpuStatic | None,
    sample: GpuSample,
    trend: GpuTrend | None,
    layout: _Layout,
    badge: GpuBadge | None = None,
) -> dict[str, str]:
    name = fmt.short_gpu_name(static.name if static else "GPU", layout.name_cells)
    cells = {"gpu": badge_cell(sample.index, badge), "name": name}
    if sample.lost:
        cells["memory"] = "[bold red]LOST[/]"
        cells["util"] = fmt.clip(sample.error or "", 9 if layout.compact else 15)
        return cells
    cells["memory"] = fmt.memory_cell(
        sample.memory_used_bytes, sample.memory_total_bytes, layout.bar_cells, layout.memory_digits
    )
    cells["util"] = fmt.percent_cell(sample.utilization_gpu_pct, layout.util_bar_cells)
    cells["temp"] = fmt.temperature_cell(sample.temperature_c)
    limit = sample.power_limit_w or (static.power_limit_w if static else None)
    cells["power"] = fmt.power_cell(sample.power_w, limit)
    cells["pcie"] = fmt.pcie_link_cell(
        sample.pcie_gen, sample.pcie_width, static.pcie_max_gen if static else None
    )
    cells["pcie_io"] = fmt.pcie_traffic_cell(sample.pcie_tx_bytes_per_s, sample.pcie_rx_bytes_per_s)
    cells["procs"] = str(len({p.pid for p in sample.processes}))
    if trend is not None:
        spark = layout.spark_cells
        cells["mem_hist"] = f"[magenta]{fmt.sparkline(trend.memory_used_pct, spark)}[/]"
        cells["util_hist"] = f"[green]{fmt.sparkline(trend.utilization_pct, spark)}[/]"
        cells["fill"] = fmt.fill_cell(trend.memory_fill_bytes_per_s, trend.memory_rising)
    return cells


def _slowdown_cells(
    sample: GpuSample, trend: GpuTrend | None, compact: bool
) -> dict[str, str] | None:
    """The row under a slowed GPU: its SM and memory clocks and why they are held down.

    A GPU slowed within the history's hold keeps its row, saying so, with the clocks it
    runs at now: under load a power cap comes and goes every few seconds, and a row that
    came and went with it would re-lay the whole screen out each time."""
    labels = throttle_labels(sample)
    title, style = "↳ slowed:", "yellow"
    if not labels:
        labels = reason_labels(trend.recent_slowdown_reasons) if trend and not sample.lost else ()
        if not labels:
            return None
        held = f"<{SLOWDOWN_HOLD_S / 60:g}m ago:"  # the history's hold, in its words
        title, style = (f"↳ {held}" if compact else f"↳ slowed {held}"), "dim yellow"
    sm = "?" if sample.sm_clock_mhz is None else str(sample.sm_clock_mhz)
    clocks = f"SM {sm} MHz"
    if not compact:
        mem = "?" if sample.memory_clock_mhz is None else str(sample.memory_clock_mhz)
        clocks = f"SM {sm} mem {mem} MHz"
    return {
        "name": f"[{style}]{title}[/]",
        "memory": f"[{style}]{fmt.clip(clocks, 15 if compact else 22)}[/]",
        "util": f"[{style}]{fmt.clip(', '.join(labels), 9 if compact else 15)}[/]",
    }


def _total_cells(snapshot: GpuBoxSnapshot, layout: _Layout) -> dict[str, str]:
    compact = layout.compact
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
        "name": f"[b]{fmt.clip(label, layout.name_cells)}[/]",
        "memory": fmt.memory_cell(used if total else None, total or None, layout.bar_cells, 0),
        "util": fmt.percent_cell(sum(utils) / len(utils) if utils else None, layout.util_bar_cells),
        "power": fmt.power_cell(
            sum(power) if power else None,
            sum(limits) if limits and layout is _FULL else None,
        ),
        "procs": str(len({p.pid for p in snapshot.processes()})),
    }
