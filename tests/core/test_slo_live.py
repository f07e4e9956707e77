"""Live SLO alerts, pure: the p99 inside its bucket, the windows, the two-window burn."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.alerts.engine import AlertChange
from tui.alerts.monitor import AlertMonitor
from tui.core.alert_rules import AlertingConfig, LiveSlo
from tui.core.config import profile_from_data
from tui.serving.metrics import compute_metrics, histogram_quantile, parse_metrics
from tui.serving.slo_live import (
    LiveSloWatch,
    SlidingWindows,
    SloCounters,
    quantile_in_bucket,
)

INF = math.inf
ITL_BOUNDS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, INF)
SLO = LiveSlo(itl_p99_ms=80, ttft_p99_ms=0, short_window_s=60, long_window_s=300)


def test_p99_interpolated_inside_its_bucket() -> None:
    cumulative = ((0.3, 0.0), (0.5, 50.0), (1.0, 100.0), (INF, 100.0))
    found = quantile_in_bucket(0.99, cumulative)
    assert found is not None
    assert found.value_s == pytest.approx(0.99)  # 0.5 + 0.5 * (99 - 50) / 50
    assert (found.lower_s, found.upper_s, found.count) == (0.5, 1.0, 100.0)
    assert found.text("TTFT") == "p99 TTFT 0.99 s (bucket 0.5-1 s)"
    # Above the highest finite bound: that bound is all that is known, and said so.
    top = quantile_in_bucket(0.99, ((0.3, 1.0), (INF, 100.0)))
    assert top is not None and (top.value_s, top.upper_s) == (0.3, INF)
    assert "bucket 0.3-+Inf s" in top.text("E2E")
    assert quantile_in_bucket(0.99, ((0.3, 0.0), (INF, 0.0))) is None  # no request: unknown
    assert quantile_in_bucket(0.99, ()) is None


@given(st.lists(st.integers(0, 50), min_size=2, max_size=12), st.floats(0.01, 0.999))
def test_p99_matches_prometheus_and_stays_in_its_bucket(counts: list[int], q: float) -> None:
    bounds = [0.1 * (i + 1) for i in range(len(counts) - 1)] + [INF]
    running, cumulative = 0.0, []
    for bound, count in zip(bounds, counts, strict=True):
        running += count
        cumulative.append((bound, running))
    found = quantile_in_bucket(q, tuple(cumulative))
    if running == 0:
        assert found is None
        return
    assert found is not None
    assert found.value_s == pytest.approx(histogram_quantile(q, tuple(cumulative)))
    assert found.lower_s <= found.value_s <= found.upper_s


def counters(at_s: float, itl: list[tuple[int, float]], waiting: float = 0.0) -> SloCounters:
    """Cumulative ITL buckets from (count, value) observations so far."""
    cumulative = tuple((b, float(sum(n for n, v in itl if v <= b))) for b in ITL_BOUNDS)
    done = float(sum(n for n, _ in itl))
    return SloCounters(at_s, {"itl": cumulative}, {"length": done, "abort": 0.0}, 0.0, waiting)


def run(
    until_s: float, each: Callable[[float], list[tuple[int, float]]]
) -> list[tuple[float, str]]:
    """One scrape every 5 s until `until_s`, `each(t)` the ITLs observed in it; the changes."""
    monitor = AlertMonitor(AlertingConfig(slo=SLO), "box")
    observed: list[tuple[int, float]] = []
    out: list[tuple[float, str]] = []
    t = 0.0
    while t < until_s:
        t += 5.0
        observed += each(t)
        out += [
            (t, f"{c.alert_id} {c.state}") for c in monitor_changes(monitor, counters(t, observed))
        ]
    return out


def step(start_s: float, end_s: float) -> Callable[[float], list[tuple[int, float]]]:
    """100 ITLs a scrape: 30 ms, 180 ms between start_s and end_s."""
    return lambda t: [(100, 0.18 if start_s < t <= end_s else 0.03)]


def monitor_changes(monitor: AlertMonitor, counters: SloCounters) -> list[AlertChange]:
    burns = monitor.slo.observe(counters)
    signals = {name: {None: value} for name, (value, _) in burns.items()}
    details = {name: words for name, (_, words) in burns.items()}
    return monitor._observe(signals, counters.at_s, details)


def test_a_spike_over_the_short_window_only_never_pages() -> None:
    # One scrape with 40 of its 100 ITLs at 180 ms: 3.3 % of the short window's
    # requests (its p99 is over) but 0.7 % of the long window's (under): no page.
    def spike(t: float) -> list[tuple[int, float]]:
        return [(60, 0.03), (40, 0.18)] if t == 605.0 else [(100, 0.03)]

    assert run(1200, spike) == []


def test_a_step_fires_within_the_long_window_and_resolves_after_it() -> None:
    changes = run(1800, step(600, 1200))
    assert [text for _, text in changes] == ["slo-itl firing", "slo-itl resolved"], changes
    fired_s, resolved_s = changes[0][0], changes[1][0]
    assert 600 < fired_s <= 600 + SLO.long_window_s
    assert 1200 < resolved_s <= 1200 + SLO.short_window_s + 5
    print(f"\nstep at 600 s: fired at {fired_s:g} s, ended at 1200 s: resolved at {resolved_s:g} s")


def test_the_evidence_states_the_bucket() -> None:
    monitor = AlertMonitor(AlertingConfig(slo=SLO), "box")
    observed: list[tuple[int, float]] = []
    fired: list[AlertChange] = []
    for step in range(1, 80):
        observed.append((100, 0.18))
        fired += monitor_changes(monitor, counters(step * 5.0, observed))
    (change,) = fired
    assert change.alert_id == "slo-itl" and change.state == "firing"
    assert "p99 ITL 0.2 s (bucket 0.15-0.2 s) over 60 s" in change.text, change.text
    assert "over 300 s; SLO p99 ITL 0.08 s" in change.text, change.text


def test_nothing_until_the_long_window_is_covered() -> None:
    watch = LiveSloWatch(SLO)
    assert watch.observe(counters(0.0, [(100, 0.5)])) == {}
    assert watch.observe(counters(100.0, [(100, 0.5), (100, 0.5)])) == {}
    assert "slo.itl_p99_burn" in watch.observe(counters(300.0, [(300, 0.5)]))


def test_windows_keep_only_the_longest_span() -> None:
    windows = SlidingWindows(300)
    for step in range(200):
        windows.add(counters(step * 5.0, [(step, 0.03)]))
    assert len(windows._kept) == 61  # 300 s of 5 s scrapes and the one at the start
    figures = windows.figures(60)
    assert figures is not None and figures.span_s == 60


def test_failed_share_queue_growth_and_preemptions() -> None:
    watch = LiveSloWatch(replace(SLO, failed_pct=5.0))
    burns = {}
    for step in range(0, 65):
        t = step * 5.0
        finished = {"length": 9.0 * step, "abort": 1.0 * step, "error": 0.0}
        burns = watch.observe(SloCounters(t, {}, finished, 2.0 * step, 1.0 * step))
    value, words = burns["slo.failed_burn"]
    assert value == pytest.approx(2.0)  # 10 % failing against 5 %
    assert "12 of 120 aborted or errored over 60 s" in words
    assert burns["slo.preemptions"][0] == 24.0  # 2 per scrape over 60 s
    assert burns["slo.queue_growth"][0] == 12.0


def test_the_live_page_feeds_the_windows() -> None:
    captured = Path("/work/shared/fixtures/vllm-0.32-cpu/metrics.txt")
    if not captured.exists():
        pytest.skip(f"no captured page at {captured}")
    metrics = compute_metrics(parse_metrics(captured.read_text(), at_s=1.0))
    assert metrics.slo is not None
    assert set(metrics.slo.histograms) == {"ttft", "itl", "e2e"}
    assert metrics.slo.finished["length"] == 33.0 and metrics.slo.preemptions == 0.0


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ({"itl_p99_ms": -1}, "alerting.slo.itl_p99_ms"),
        ({"failed_pct": 120}, "alerting.slo.failed_pct"),
        ({"short_window_s": 300, "long_window_s": 60}, "alerting.slo.long_window_s"),
        ({"ttft_p99_s": 1}, "ttft_p99_s"),
    ],
)
def test_bad_values_are_one_line_errors(table: dict[str, float], problem: str) -> None:
    _, problems = profile_from_data({"alerting": {"slo": table}}, "p", None)
    assert len(problems) == 1 and problem in problems[0], problems
    assert "\n" not in problems[0]


def test_targets_default_to_the_benchmark_slo() -> None:
    data = {"benchmark": {"slo": {"ttft_p99_ms": 900, "itl_p99_ms": 40}}}
    profile, problems = profile_from_data(data, "p", None)
    assert problems == []
    assert (profile.alerting.slo.ttft_p99_ms, profile.alerting.slo.itl_p99_ms) == (900, 40)
    data["alerting"] = {"slo": {"itl_p99_ms": 60, "e2e_p99_ms": 20000}}
    profile, _ = profile_from_data(data, "p", None)
    assert (profile.alerting.slo.itl_p99_ms, profile.alerting.slo.e2e_p99_ms) == (60, 20000)
