"""Compare two benchmark runs: what changed in the configuration, and which metrics moved.

Metrics are compared level by level (same concurrency or rate). A metric's
noise is twice the combined standard error of the two means (std / sqrt(n) per
run, n counting requests), or for throughput the same relative error as the per-request TPOT; when
the history holds repeat runs of either configuration (same config hash and
workload), the spread of those repeats widens the noise. A change within the
noise is reported as no change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tui.bench.best import CONFIG_FIELDS, config_key, level_label, workload_key
from tui.bench.model import BenchResult, LatencyStats, LevelResult
from tui.core.errors import UsageError

WORKLOAD_FIELDS = ("preset", "endpoint", "input_tokens", "output_tokens")


@dataclass(frozen=True, slots=True)
class MetricChange:
    """One metric of one level: both values, the change, its noise and the verdict."""

    level: str
    metric: str
    a: float
    b: float
    noise: float
    higher_is_better: bool

    @property
    def change_pct(self) -> float:
        return 100.0 * (self.b - self.a) / self.a if self.a else 0.0

    @property
    def verdict(self) -> str:
        delta = self.b - self.a
        if abs(delta) <= self.noise:
            return "no change"
        return "better" if (delta > 0) == self.higher_is_better else "worse"


def find_run(runs: Sequence[BenchResult], key: str) -> BenchResult:
    """A run by id prefix, or `-1`/`-2` for the newest/second newest; one-line error else."""
    if key.startswith("-") and key[1:].isdigit():
        index = int(key)
        if len(runs) >= -index:
            return runs[index]
        raise UsageError(f"bench compare: only {len(runs)} runs in the history, asked for {key}")
    matches = [run for run in runs if run.run_id.startswith(key)]
    if len(matches) != 1:
        found = "no run" if not matches else f"{len(matches)} runs"
        raise UsageError(f"bench compare: {found} with id {key!r} in the history")
    return matches[0]


def config_diff(a: BenchResult, b: BenchResult) -> list[tuple[str, str, str]]:
    """(field, A, B) for every configuration or workload field that differs."""
    rows = []
    for name in CONFIG_FIELDS:
        left, right = getattr(a.context, name), getattr(b.context, name)
        if left != right:
            rows.append((name, str(left), str(right)))
    for name in WORKLOAD_FIELDS:
        left, right = getattr(a, name), getattr(b, name)
        if left != right:
            rows.append((name, str(left), str(right)))
    return rows


def _se_ms(stats: LatencyStats, requests: int) -> float:
    """Standard error of a mean; pooled ITL gaps of one request are not independent, so
    at most one sample per request counts."""
    n = min(stats.count, requests)
    return stats.std_ms / math.sqrt(n) if n > 1 else math.inf


def _repeat_spread(runs: Sequence[BenchResult], like: BenchResult, key: str, metric: str) -> float:
    """Half the range of `metric` over repeat runs of `like`'s configuration and workload."""
    values = []
    for run in runs:
        if workload_key(run) != workload_key(like) or config_key(run) != config_key(like):
            continue
        for level in run.levels:
            if level_label(level) == key:
                values.append(_metric_value(level, metric))
    return (max(values) - min(values)) / 2 if len(values) >= 2 else 0.0


def _metric_value(level: LevelResult, metric: str) -> float:
    if metric == "output tok/s":
        return level.output_throughput
    stats = {"TTFT mean ms": level.ttft, "TPOT mean ms": level.tpot, "ITL mean ms": level.itl}
    return stats[metric].mean_ms


def compare_runs(
    a: BenchResult, b: BenchResult, history: Sequence[BenchResult] = ()
) -> list[MetricChange]:
    """Every metric of every level both runs measured."""
    changes = []
    b_levels = {level_label(level): level for level in b.levels}
    for left in a.levels:
        key = level_label(left)
        right = b_levels.get(key)
        if right is None or not left.completed or not right.completed:
            continue
        for metric, stats_a, stats_b in (
            ("TTFT mean ms", left.ttft, right.ttft),
            ("TPOT mean ms", left.tpot, right.tpot),
            ("ITL mean ms", left.itl, right.itl),
        ):
            if not stats_a.count or not stats_b.count:
                continue
            se_a, se_b = _se_ms(stats_a, left.completed), _se_ms(stats_b, right.completed)
            noise = 2 * math.hypot(se_a, se_b)
            noise = max(noise, *(_repeat_spread(history, r, key, metric) for r in (a, b)))
            changes.append(
                MetricChange(key, metric, stats_a.mean_ms, stats_b.mean_ms, noise, False)
            )
        # Throughput ~ 1 / TPOT: its relative noise is TPOT's relative standard error.
        rel = [
            _se_ms(lv.tpot, lv.completed) / lv.tpot.mean_ms
            if lv.tpot.mean_ms and lv.tpot.count > 1
            else 0.0
            for lv in (left, right)
        ]
        noise = 2 * math.hypot(rel[0] * left.output_throughput, rel[1] * right.output_throughput)
        metric = "output tok/s"
        noise = max(noise, *(_repeat_spread(history, r, key, metric) for r in (a, b)))
        changes.append(
            MetricChange(key, metric, left.output_throughput, right.output_throughput, noise, True)
        )
    return changes


def format_comparison(a: BenchResult, b: BenchResult, changes: Sequence[MetricChange]) -> str:
    lines = [f"A {a.run_id} ({a.started_at[:16]})  vs  B {b.run_id} ({b.started_at[:16]})"]
    diff = config_diff(a, b)
    if diff:
        lines.append("configuration:")
        lines += [f"  {name}: {left} -> {right}" for name, left, right in diff]
    else:
        lines.append("configuration: the same")
    lines.append(
        f"{'level':>7} {'metric':<13} {'A':>10} {'B':>10} {'change':>8} {'noise':>9}  verdict"
    )
    for change in changes:
        lines.append(
            f"{change.level:>7} {change.metric:<13} {change.a:>10,.1f} {change.b:>10,.1f} "
            f"{change.change_pct:>+7.1f}% {'±' + format(change.noise, ',.1f'):>9}  {change.verdict}"
        )
    if not changes:
        lines.append("  no level measured by both runs")
    return "\n".join(lines)
