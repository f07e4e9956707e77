"""Sparklines from cached bucket bounds equal the plain definition: the max of each bucket."""

from __future__ import annotations

import random

from widgets.gpu_format import SPARK_LEVELS, spark_buckets, sparkline


def _reference(values: tuple[float, ...], width: int) -> str:
    if not values:
        return " " * width
    size = len(values) / width
    points = (
        [
            max(values[int(i * size) : max(int((i + 1) * size), int(i * size) + 1)])
            for i in range(width)
        ]
        if len(values) > width
        else list(values)
    )
    levels = len(SPARK_LEVELS) - 1
    return "".join(
        SPARK_LEVELS[min(levels, max(0, round(min(v, 100.0) / 100.0 * levels)))] for v in points
    ).rjust(width)


def test_sparklines_and_buckets_match_the_definition() -> None:
    rng = random.Random(18)
    for _ in range(500):
        count, width = rng.randint(0, 700), rng.randint(1, 30)
        values = tuple(rng.uniform(-5.0, 120.0) for _ in range(count))
        assert sparkline(values, width) == _reference(values, width), (count, width)
        buckets = spark_buckets(values, width)
        assert [v for bucket in buckets for v in bucket] == list(values) or count > width
        assert len(buckets) == min(count, width)


def test_kept_cells_give_the_same_sparkline_as_a_series_slides() -> None:
    """Each value's cell is kept per scale: a sliding series (every value seen before but
    one) and a second scale draw what the definition says."""
    rng = random.Random(7)
    series = [round(rng.uniform(-5.0, 120.0), rng.choice((0, 1, 3))) for _ in range(400)]
    for end in range(1, len(series)):
        values = tuple(series[max(0, end - 300) : end])
        assert sparkline(values, 12) == _reference(values, 12), end
    half = tuple(v / 2 for v in series[:50])
    expected = "".join(
        SPARK_LEVELS[min(7, max(0, round(min(v, 50.0) / 50.0 * 7)))] for v in half[-12:]
    )
    assert sparkline(half[-12:], 12, top=50.0) == expected
    assert sparkline(half[-12:], 12) == _reference(half[-12:], 12)  # the 100 scale's cells
