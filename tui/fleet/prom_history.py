"""A host's recent history from Prometheus (`/api/v1/query_range`), for the Fleet pane's sparklines.

One request per fetch whatever the number of series: each column's PromQL (the same as
the fleet rows', tui.fleet.prometheus) pinned to one host, tagged with its column name,
joined with `or`, laid on the grid of tui.fleet.history. When Prometheus cannot be asked,
the history says so in `error` instead of raising; a malformed pair or a value the
column cannot have (tui.fleet.prom_answer.sane_value) is a gap.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from tui.core.errors import ServedeckError
from tui.fleet.history import (
    DEFAULT_SPECS,
    DEFAULT_STEP_S,
    DEFAULT_WINDOW_S,
    HistorySpec,
    HostHistory,
    SeriesHistory,
    grid,
)
from tui.fleet.prom_answer import sane_value
from tui.fleet.prom_query import COLUMN_KEY, pinned_column
from tui.fleet.prometheus import PrometheusFleet


class PrometheusHistory:
    """`await fetch(host)` -> HostHistory: the last `window_s` of a few columns, one request."""

    def __init__(
        self,
        fleet: PrometheusFleet,
        *,
        window_s: float = DEFAULT_WINDOW_S,
        step_s: float = DEFAULT_STEP_S,
        specs: Sequence[HistorySpec] = DEFAULT_SPECS,
    ) -> None:
        known = fleet.config.effective_columns()
        unknown = [spec.column for spec in specs if spec.column not in known]
        if unknown:
            raise ServedeckError(f"fleet history: unknown column(s) {', '.join(unknown)}")
        self.fleet = fleet
        self.window_s = window_s
        self.step_s = step_s
        self.specs = tuple(specs)
        self.fetches = 0

    def query(self, host: str) -> str:
        parts = []
        for spec in self.specs:
            selected = pinned_column(self.fleet.config, spec.column, host)
            parts.append(f'label_replace({selected}, "{COLUMN_KEY}", "{spec.column}", "", "")')
        return " or ".join(parts)

    async def fetch(self, host: str) -> HostHistory:
        """The host's history now; Prometheus down or refusing is `error`, not an exception."""
        self.fetches += 1
        end = time.time()  # the newest step is now: a value there is the current one
        start = end - self.window_s
        count = round(self.window_s / self.step_s) + 1
        base = HostHistory(host, self.window_s, self.step_s, start, taken_at_s=time.time())
        try:
            matrix = await self.fleet.query_range(self.query(host), start, end, self.step_s)
        except ServedeckError as error:
            return replace(base, error=str(error))
        points: dict[str, list[tuple[float, float]]] = {spec.column: [] for spec in self.specs}
        for series in matrix:
            column = series.labels.get(COLUMN_KEY)
            if column not in points:
                continue
            for stamp, raw in series.points:
                value = sane_value(column, raw)
                if value is not None:
                    points[column].append((stamp, value))
        series_list = tuple(
            SeriesHistory(spec, grid(points[spec.column], start, self.step_s, count))
            for spec in self.specs
        )
        return replace(base, series=series_list)
