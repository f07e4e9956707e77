"""A level over time: slices show a stall in the middle of a run that its averages hide."""

from __future__ import annotations

from tui.bench.metrics import summarize_level
from tui.bench.model import RequestOutcome
from tui.bench.over_time import time_slices
from tui.bench.report import over_time_lines, report_lines, sparkline


def _request(start_s: float, gaps_s: list[float], ttft_s: float = 0.1) -> RequestOutcome:
    latency = ttft_s + sum(gaps_s)
    return RequestOutcome(
        success=True, start_s=start_s, ttft_s=ttft_s, latency_s=latency, end_s=start_s + latency,
        itl_s=gaps_s, chunks=len(gaps_s) + 1, output_tokens=len(gaps_s) + 1, usage_seen=True,
    )  # fmt: skip


def test_a_stall_mid_run_shows_in_its_slices() -> None:
    # two streams at 10 tok/s each for 6 s, with every token of seconds 3-4 held back
    gaps = [0.1] * 29 + [2.0] + [0.1] * 29
    outcomes = [_request(100.0, gaps), _request(100.0, gaps)]
    slices = time_slices(outcomes)
    assert [round(s.start_s) for s in slices] == list(range(len(slices)))
    rates = [round(s.output_tok_s) for s in slices]
    assert rates[0] == 20 and rates[1] == 20  # 2 x 10 tok/s
    assert 0 in rates[3:5]  # the stall
    assert all(round(s.running) == 2 for s in slices[:-1])
    assert sum(s.completed for s in slices) == 2
    assert slices[0].ttft_p50_ms == 100.0 and slices[1].ttft_p50_ms is None


def test_the_report_draws_each_figure_as_a_sparkline_within_80_columns() -> None:
    gaps = [0.1] * 29 + [2.0] + [0.1] * 29
    level = summarize_level(
        [_request(100.0, gaps), _request(100.5, gaps)], concurrency=2, request_rate=None,
        burstiness=1.0, num_requests=2, duration_s=8.5,
    )  # fmt: skip
    lines = over_time_lines(level.over_time)
    assert lines[0].startswith("  over time:") and len(lines) == 4
    assert "▁" in lines[1] and "█" in lines[1]
    assert all(len(line) <= 80 for line in report_lines(level))
    assert sparkline([0.0, None, 1.0]) == "▁ █"


def test_a_long_level_widens_its_slices_and_fits_the_line() -> None:
    outcomes = [_request(10.0 + i * 3.0, [0.5] * 20) for i in range(1000)]
    slices = time_slices(outcomes)
    assert len(slices) <= 600
    assert all(len(line) <= 80 for line in over_time_lines(slices))
