"""GpuHistory's sparkline series, kept beside the points, match a recount from the points."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.gpu.history import GpuHistory
from tui.gpu.model import GpuBoxSnapshot, GpuSample

GIB = 1024**3

_sample = st.one_of(
    st.none(),  # lost
    st.tuples(
        st.one_of(st.none(), st.integers(0, 96 * GIB)),
        st.one_of(st.none(), st.just(0), st.just(96 * GIB)),
        st.one_of(st.none(), st.floats(0, 100)),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 20.0), st.lists(_sample, min_size=2, max_size=2)), max_size=60
    ),
    st.integers(2, 12),
)
def test_series_match_a_recount(ticks: list[tuple[float, list[object]]], max_points: int) -> None:
    history = GpuHistory(window_s=30.0, max_points=max_points)
    kept: dict[int, list[tuple[float, int | None, int | None, float | None]]] = {0: [], 1: []}
    t = 0.0
    for step, samples in ticks:
        t += step  # a step of 0 repeats a tick, which the history skips
        built = []
        for index, values in enumerate(samples):
            if values is None:
                built.append(GpuSample(index=index, lost=True))
                continue
            used, total, util = values  # type: ignore[misc]
            built.append(GpuSample(index, used, total, util))
            points = kept[index]
            if points and t <= points[-1][0]:
                continue
            points.append((t, used, total, util))
            while points and (t - points[0][0] > 30.0 or len(points) > max_points):
                points.pop(0)
        history.add(GpuBoxSnapshot(source="test", taken_at_s=t, samples=tuple(built)))
    for index, points in kept.items():
        trend = history.trend(index)
        assert trend.memory_used_pct == tuple(
            100.0 * used / total for _, used, total, _ in points if used is not None and total
        )
        assert trend.utilization_pct == tuple(u for *_, u in points if u is not None)
