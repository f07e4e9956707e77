"""GpuHistory: sparkline series, fill rate by regression, plateau and ETA."""

from __future__ import annotations

import pytest

from tui.gpu.history import GpuHistory, least_squares_slope
from tui.gpu.model import GpuBoxSnapshot, GpuSample

GIB = 1024**3
TOTAL = 96 * GIB


def _snapshot(t_s: float, used: list[int | None], util: float = 50.0, lost=()) -> GpuBoxSnapshot:
    samples = tuple(
        GpuSample(index=i, lost=True)
        if i in lost
        else GpuSample(
            index=i, memory_used_bytes=u, memory_total_bytes=TOTAL, utilization_gpu_pct=util
        )
        for i, u in enumerate(used)
    )
    return GpuBoxSnapshot(source="test", taken_at_s=t_s, samples=samples)


def test_slope() -> None:
    assert least_squares_slope([(0, 1), (1, 3), (2, 5)]) == pytest.approx(2.0)
    assert least_squares_slope([(1, 1), (1, 2)]) is None
    assert least_squares_slope([(0, 1)]) is None


def test_fill_rate_and_eta_while_loading() -> None:
    history = GpuHistory(target_fraction=0.9)
    rate = 1.5 * GIB  # bytes per second
    for t in range(20):
        noise = (-1) ** t * 64 * 1024**2  # +-64 MiB jitter does not disturb the regression
        history.add(_snapshot(1000.0 + t, [int(t * rate + noise), 0]))
    loading = history.trend(0)
    assert loading.memory_fill_bytes_per_s == pytest.approx(rate, rel=0.05)
    assert loading.memory_rising
    assert loading.memory_target_bytes == int(TOTAL * 0.9)
    expected_eta = (TOTAL * 0.9 - (19 * rate - 64 * 1024**2)) / rate
    assert loading.eta_to_target_s == pytest.approx(expected_eta, rel=0.05)
    idle = history.trend(1)
    assert idle.memory_fill_bytes_per_s == pytest.approx(0.0) and not idle.memory_rising
    assert idle.eta_to_target_s is None


def test_plateau_ends_rising_and_no_target_means_no_eta() -> None:
    history = GpuHistory()
    for t in range(10):
        history.add(_snapshot(float(t), [t * GIB]))
    assert history.trend(0).memory_rising and history.trend(0).eta_to_target_s is None
    for t in range(10, 40):
        history.add(_snapshot(float(t), [10 * GIB]))
    plateau = history.trend(0)
    assert not plateau.memory_rising and plateau.memory_fill_bytes_per_s == pytest.approx(0.0)


def test_too_few_points_give_no_rate() -> None:
    history = GpuHistory()
    history.add(_snapshot(0.0, [GIB]))
    history.add(_snapshot(1.0, [2 * GIB]))
    assert history.trend(0).memory_fill_bytes_per_s is None
    assert history.trend(7).memory_used_pct == ()


def test_window_trims_old_points_and_series_are_percent() -> None:
    history = GpuHistory(window_s=60.0)
    for t in range(200):
        history.add(_snapshot(float(t), [48 * GIB], util=float(t % 100)))
    trend = history.trend(0)
    assert len(trend.memory_used_pct) == 61
    assert trend.memory_used_pct[-1] == pytest.approx(50.0)
    assert trend.utilization_pct[-1] == 99.0


def test_lost_gpus_unavailable_boxes_and_repeated_ticks_are_skipped() -> None:
    history = GpuHistory()
    history.add(_snapshot(1.0, [GIB, GIB], lost=(1,)))
    assert set(history.trends()) == {0}
    history.add(_snapshot(1.0, [GIB, GIB]))  # same tick again: only GPU 1 is new
    history.add(GpuBoxSnapshot(source="test", taken_at_s=2.0, available=False, error="x"))
    assert len(history.trend(0).memory_used_pct) == 1
    assert len(history.trend(1).memory_used_pct) == 1


def test_a_fresh_plateau_stops_rising_before_the_regression_window_drains() -> None:
    """Seconds after the load stops, the 15 s regression still slopes up; the pane must not."""
    history = GpuHistory()
    for t in range(20):
        history.add(_snapshot(float(t), [t * 4 * GIB]))
    assert history.trend(0).memory_rising
    for t in range(20, 25):
        history.add(_snapshot(float(t), [76 * GIB]))
    trend = history.trend(0)
    assert trend.memory_fill_bytes_per_s is not None and trend.memory_fill_bytes_per_s > 0
    assert not trend.memory_rising and trend.eta_to_target_s is None
