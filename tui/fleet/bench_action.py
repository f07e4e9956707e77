"""The quick benchmark on one fleet host: planned, confirmed, audited, refused in read-only.

The fleet pane's `b` runs the host's default preset (`quick` unless the profile says
otherwise) with the console's bench runner, against the server through the host's own
SSH port forward, so nothing new is opened on the box. A benchmark puts load on a
serving box, so it is asked for first and refused when the profile is read-only; the
request, refusal and outcome go to the audit log, and the result to the bench history.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tui.bench.context import context_for_profile
from tui.bench.driver import run_bench
from tui.bench.history import append_result
from tui.bench.workload import spec_from_preset
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.fleet.actions import ReadOnlyRefused

if TYPE_CHECKING:
    from tui.bench.model import BenchResult

WHAT = "benchmark"


@dataclass(frozen=True, slots=True)
class BenchPlan:
    """What the operator is asked to confirm: which preset, against which server."""

    host: str  # the fleet row's name
    host_label: str  # the route, jump chain included
    preset: str
    workload: str  # "4 requests, 128 in / 128 out tokens, concurrency 1"
    base_url: str  # as the profile names it (reached through the forward)


def _refuse(deck: Deck, reason: str, audit_path: Path | None) -> None:
    append_audit("fleet.refused", deck.host_label, {"action": WHAT, "reason": reason}, audit_path)


async def plan_bench(name: str, deck: Deck, *, audit_path: Path | None = None) -> BenchPlan:
    """The host's default preset; refused (audited) when read-only or with no server URL."""
    if deck.profile.read_only:
        _refuse(deck, "read-only", audit_path)
        raise ReadOnlyRefused(f"{deck.host_label}: read-only: a benchmark is disabled")
    if not deck.base_url:
        raise ServedeckError(f"{name}: no base_url in the profile; nothing to benchmark")
    benchmark = deck.profile.benchmark
    preset = benchmark.presets[benchmark.default_preset]
    concurrency = ", ".join(str(c) for c in preset.concurrency)
    workload = (
        f"{preset.num_requests} requests, {preset.input_tokens} in / "
        f"{preset.output_tokens} out tokens, concurrency {concurrency}"
    )
    return BenchPlan(name, deck.host_label, preset.name, workload, deck.base_url)


async def run_bench_on_host(
    plan: BenchPlan,
    deck: Deck,
    *,
    confirmed: bool,
    audit_path: Path | None = None,
    history_path: Path | None = None,
) -> BenchResult:
    """The planned preset through the host's forward; audited; kept in the bench history."""
    if deck.profile.read_only:
        _refuse(deck, "read-only", audit_path)
        raise ReadOnlyRefused(f"{deck.host_label}: read-only: a benchmark is disabled")
    if not confirmed:
        _refuse(deck, "not confirmed", audit_path)
        raise ServedeckError(f"{deck.host_label}: benchmark not confirmed")
    url = await deck.reachable_base_url()
    preset = deck.profile.benchmark.presets[plan.preset]
    context = replace(context_for_profile(deck.profile), host=deck.host_label, base_url=url)
    spec = spec_from_preset(
        preset,
        url,
        api_key_env=deck.profile.service.api_key_env,
        context=context,
        percentiles=deck.profile.benchmark.percentiles,
    )
    append_audit(
        "fleet.bench.request",
        deck.host_label,
        {"preset": plan.preset, "workload": plan.workload},
        audit_path,
    )
    try:
        result = await run_bench(spec)
    except ServedeckError as error:
        append_audit("fleet.bench.failed", deck.host_label, {"error": str(error)}, audit_path)
        raise
    append_result(result, history_path)
    append_audit(
        "fleet.bench.done",
        deck.host_label,
        {"preset": plan.preset, "run_id": result.run_id, "summary": bench_line(result)},
        audit_path,
    )
    return result


def bench_line(result: BenchResult) -> str:
    """One line for the pane and the audit log: requests done, output tok/s, median TTFT."""
    completed = sum(level.completed for level in result.levels)
    failed = sum(level.failed for level in result.levels)
    best = result.best_output_throughput
    ttfts = [level.ttft.median_ms for level in result.levels if level.ttft.count]
    ttft = f", median TTFT {min(ttfts):.0f} ms" if ttfts else ""
    partial = " (partial)" if result.partial else ""
    return f"{completed} requests ok, {failed} failed, {best:.1f} output tok/s{ttft}{partial}"
