"""A host's recent history as the Fleet pane's sparklines draw it (frozen, no I/O).

The points lie on a regular grid (start + k * step); a step with no sample stays None, so
a scrape gap or a dead exporter is drawn as a gap, never as 0. tui.fleet.prom_history
fills it from Prometheus's `query_range`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_WINDOW_S = 900.0  # 15 minutes
DEFAULT_STEP_S = 15.0


@dataclass(frozen=True, slots=True)
class HistorySpec:
    """Which column a sparkline draws, its title, unit and full scale (None: its own peak)."""

    column: str
    title: str
    unit: str = ""
    top: float | None = None


DEFAULT_SPECS: tuple[HistorySpec, ...] = (
    HistorySpec("gpu_util_pct_max", "GPU util max", "%", 100.0),
    HistorySpec("gen_tok_s", "gen tok/s"),
    HistorySpec("running", "running"),
)


@dataclass(frozen=True, slots=True)
class SeriesHistory:
    """One column of one host on the grid: `values[k]` is at start_s + k * step_s (None: none)."""

    spec: HistorySpec
    values: tuple[float | None, ...]

    @property
    def known(self) -> list[float]:
        return [value for value in self.values if value is not None]

    @property
    def last(self) -> float | None:
        """The newest value, if the newest step has one (an old value is not "now")."""
        return self.values[-1] if self.values else None

    @property
    def peak(self) -> float | None:
        known = self.known
        return max(known) if known else None


@dataclass(frozen=True, slots=True)
class HostHistory:
    """The history of one host over `window_s`, or why there is none."""

    host: str
    window_s: float
    step_s: float
    start_s: float
    series: tuple[SeriesHistory, ...] = ()
    error: str | None = None
    taken_at_s: float = 0.0

    @property
    def empty(self) -> bool:
        """No series has a single point in the window (the host is not scraped, or was not)."""
        return not any(series.known for series in self.series)


def grid(
    points: Sequence[tuple[float, float]], start_s: float, step_s: float, count: int
) -> tuple[float | None, ...]:
    """The points on the grid start_s + k * step_s, k < count (pure: tested on its own)."""
    values: list[float | None] = [None] * count
    for stamp, value in points:
        index = round((stamp - start_s) / step_s)
        if 0 <= index < count and math.isfinite(value):
            values[index] = value
    return tuple(values)
