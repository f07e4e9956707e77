"""`--repeat`: each figure's spread across runs, and when the runs have settled."""

from __future__ import annotations

import pytest

from tests.core.test_bench_best import _level, _run
from tui.bench.repeats import (
    level_spreads,
    repeat_lines,
    settled,
    summarize_repeats,
    summary_from_dict,
)


def _runs(*speeds: float) -> list:
    return [_run(f"r{i}", (_level(1, 8 if s else 0, s),)) for i, s in enumerate(speeds)]


def test_spread_is_min_median_max_and_the_interval_of_the_mean_across_runs() -> None:
    (level,) = level_spreads(_runs(100.0, 110.0, 90.0))
    tok_s = level.figure("output_tok_s")
    assert tok_s is not None
    assert (tok_s.min, tok_s.median, tok_s.max) == (90.0, 100.0, 110.0)
    assert tok_s.low == pytest.approx(100 - 4.303 * 10 / 3**0.5)  # t(2) over three runs
    assert tok_s.spread_pct == pytest.approx(20.0)


def test_a_run_that_measured_nothing_is_unknown_never_zero() -> None:
    (level,) = level_spreads(_runs(100.0, 0.0, 120.0))
    tok_s = level.figure("output_tok_s")
    assert tok_s is not None and tok_s.values == (100.0, None, 120.0) and tok_s.min == 100.0
    assert not settled(_runs(100.0, 0.0, 100.0), 50.0)  # an unknown run never agrees


def test_settled_needs_the_last_three_runs_within_the_percent() -> None:
    assert not settled(_runs(100.0, 101.0), 5.0)  # two can agree by chance
    assert settled(_runs(50.0, 100.0, 102.0, 101.0), 5.0)
    assert not settled(_runs(100.0, 102.0, 110.0), 5.0)


def test_the_summary_travels_as_a_dict_and_reads_as_lines() -> None:
    summary = summarize_repeats(_runs(100.0, 110.0), 4, 5.0, "run 2 partial")
    assert summary_from_dict(summary.to_dict()) == summary
    lines = repeat_lines(summary)
    assert lines[0].startswith("repeated runs: 2 of 4, settle within 5% (run 2 partial)")
    assert "    out tok/s 100.0 / 105.0 / 110.0  [" in "\n".join(lines)
    assert all(len(line) <= 80 for line in lines)
