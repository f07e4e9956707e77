"""A row drawn from its cells' merged pieces is the row drawn from the pieces as split.

GpuTable keeps each cell's pieces with equal-style neighbours joined (what the row's
Strip joins anyway), so a row's Strip loops over fewer pieces. Every row of a real box
and of the simulator's churn mode is drawn both ways and compared segment by segment.
"""

from __future__ import annotations

from pathlib import Path

from rich.segment import Segment

from tests.support.gpu_boxes import loading_history
from tests.support.gpu_pane_app import GpuPaneApp
from tui.gpu.history import GpuHistory
from tui.sim.gpu_model import SimGpuModel
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable
from widgets.table_cells import CELL_PADDING, Line, fit_pieces, markup_pieces, merged_pieces


def _split_line(table: GpuTable, cells: dict[str, str]) -> Line:
    """The row's pieces as the markup splits them, nothing joined."""
    pad = (" " * CELL_PADDING, None)
    line: list[tuple[str, object]] = []
    for column in table._columns:
        markup = cells.get(column.key, "")
        line += [pad, *fit_pieces(markup_pieces(markup, table._style_named), column.width), pad]
    return tuple(line)  # type: ignore[arg-type]


def _segments(table: GpuTable, line: Line) -> list[Segment]:
    base, _, _ = table._line_styles()
    return list(table._strip(line, base, table.size.width, base))


async def test_rows_from_merged_cells_draw_like_rows_from_split_cells(tmp_path: Path) -> None:
    snapshot, trends = loading_history()
    app = GpuPaneApp(snapshot, trends)
    model, history = SimGpuModel(tmp_path, churn=True), GpuHistory()
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table, pane = app.query_one(GpuTable), app.query_one(GpuPane)
        for tick in range(-1, 6):
            if tick >= 0:  # then churning ticks: every field moves
                churned = model.snapshot(now_s=1000.0 + tick)
                history.add(churned)
                pane.update_view(churned, history.trends())
                await pilot.pause()
            for row in table._rows:
                merged = table._line(row.cells)
                split = _split_line(table, row.cells)
                assert len(merged) < len(split)
                assert _segments(table, merged) == _segments(table, split), row.key
            for pieces in table._cell_cache.values():
                assert pieces == merged_pieces(pieces)  # nothing left to join inside a cell
