"""Per-GPU history for sparklines, and how fast memory fills while a model loads.

A load takes ~30 minutes and gives no HTTP endpoint meanwhile, so GPU memory is
one of the few signs of progress. The fill rate is the least-squares slope of
used memory over the last few seconds (robust to one noisy sample); memory has
reached its plateau once that slope is near zero. The ETA is only given against
a known target (e.g. total x gpu_memory_utilization), never guessed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from tui.gpu.model import GpuBoxSnapshot

MIB = 1024**2
SLOWDOWN_HOLD_S = 60.0  # a slowed GPU keeps its row this long after its last slowdown


@dataclass(frozen=True, slots=True)
class GpuTrend:
    """What the history says about one GPU: sparkline series (oldest first) and fill rate."""

    index: int
    memory_used_pct: tuple[float, ...] = ()
    utilization_pct: tuple[float, ...] = ()
    memory_fill_bytes_per_s: float | None = None  # None: too few samples yet
    memory_rising: bool = False
    memory_target_bytes: int | None = None
    eta_to_target_s: float | None = None  # None: not rising, no target, or target passed
    # The clock-event reasons of this GPU's latest slowed sample while it is within the
    # history's hold (a minute): power-cap slowdowns come and go every few seconds under
    # load, and a row that appears and goes with each would re-lay the screen out each time.
    recent_slowdown_reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Point:
    t_s: float
    used_bytes: int | None
    total_bytes: int | None
    utilization_pct: float | None


def least_squares_slope(points: list[tuple[float, float]]) -> float | None:
    """Slope of y over x; None for fewer than two distinct x values."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


class GpuHistory:
    """Ring buffers per GPU, fed one GpuBoxSnapshot per tick."""

    def __init__(
        self,
        window_s: float = 300.0,
        rate_window_s: float = 15.0,
        rising_threshold_bytes_per_s: float = 32 * MIB,
        target_fraction: float | None = None,
        max_points: int = 4096,
        slowdown_hold_s: float = SLOWDOWN_HOLD_S,
    ) -> None:
        self.window_s = window_s
        self.rate_window_s = rate_window_s
        self.rising_threshold_bytes_per_s = rising_threshold_bytes_per_s
        self.target_fraction = target_fraction
        self._points: dict[int, deque[_Point]] = {}
        # The sparkline series (memory %, utilization %) kept in step with the points, so
        # a trend copies them instead of recomputing them from every point on every tick.
        self._series: dict[int, tuple[deque[float], deque[float]]] = {}
        self._max_points = max_points
        self.slowdown_hold_s = slowdown_hold_s
        self._slowed: dict[int, tuple[float, tuple[str, ...]]] = {}  # last slowed (t_s, reasons)

    def add(self, snapshot: GpuBoxSnapshot) -> None:
        if not snapshot.available:
            return
        now = snapshot.taken_at_s
        for sample in snapshot.samples:
            if sample.lost:
                continue
            points = self._points.setdefault(sample.index, deque())
            if points and now <= points[-1].t_s:
                continue  # the same tick twice, or a clock step back: keep the series monotonic
            memory, utilization = self._series.setdefault(sample.index, (deque(), deque()))
            point = _Point(
                now, sample.memory_used_bytes, sample.memory_total_bytes, sample.utilization_gpu_pct
            )
            points.append(point)
            if sample.throttle_reasons:
                self._slowed[sample.index] = (now, sample.throttle_reasons)
            if point.used_bytes is not None and point.total_bytes:
                memory.append(100.0 * point.used_bytes / point.total_bytes)
            if point.utilization_pct is not None:
                utilization.append(point.utilization_pct)
            while points and (
                now - points[0].t_s > self.window_s or len(points) > self._max_points
            ):
                old = points.popleft()  # its values leave the series too (they are in order)
                if old.used_bytes is not None and old.total_bytes:
                    memory.popleft()
                if old.utilization_pct is not None:
                    utilization.popleft()

    def trend(self, index: int) -> GpuTrend:
        points = self._points.get(index)
        if not points:
            return GpuTrend(index=index)
        memory_series, utilization_series = self._series[index]
        memory_pct = tuple(memory_series)
        utilization = tuple(utilization_series)
        last = points[-1]
        recent: list[tuple[float, float]] = []
        for p in reversed(points):  # newest first: stop at the first point out of the window
            if last.t_s - p.t_s > self.rate_window_s:
                break
            if p.used_bytes is not None:
                recent.append((p.t_s, float(p.used_bytes)))
        recent.reverse()
        rate = None
        if len(recent) >= 3 and recent[-1][0] - recent[0][0] >= self.rate_window_s / 3:
            rate = least_squares_slope(recent)
        rising = (
            rate is not None
            and rate > self.rising_threshold_bytes_per_s
            and self._still_rising(recent)
        )
        target = None
        if self.target_fraction is not None and last.total_bytes:
            target = int(last.total_bytes * self.target_fraction)
        eta = None
        if rising and target is not None and last.used_bytes is not None and rate:
            remaining = target - last.used_bytes
            eta = remaining / rate if remaining > 0 else None
        slowed_at_s, slowdown_reasons = self._slowed.get(index, (None, ()))
        if slowed_at_s is None or last.t_s - slowed_at_s > self.slowdown_hold_s:
            slowdown_reasons = ()
        return GpuTrend(
            index=index,
            memory_used_pct=memory_pct,
            utilization_pct=utilization,
            memory_fill_bytes_per_s=rate,
            memory_rising=rising,
            memory_target_bytes=target,
            eta_to_target_s=eta,
            recent_slowdown_reasons=slowdown_reasons,
        )

    def _still_rising(self, recent: list[tuple[float, float]]) -> bool:
        """The regression window lags a plateau by seconds: memory must also have grown
        since the previous sample, so the fill rate goes the tick memory is flat."""
        (t0, used0), (t1, used1) = recent[-2], recent[-1]
        return t1 > t0 and (used1 - used0) / (t1 - t0) > self.rising_threshold_bytes_per_s

    def trends(self) -> Mapping[int, GpuTrend]:
        return {index: self.trend(index) for index in sorted(self._points)}
