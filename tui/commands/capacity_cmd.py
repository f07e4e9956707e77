"""`servedeck bench --capacity`: how many users the server holds under an SLO, in one sentence.

The SLO comes from the profile's `[benchmark.slo]` (0 switches an objective
off), then `--slo` overrides it. The workload is the chosen preset's prompt
and output length. The demo's simulator runs on a fast clock (DEMO_TIME_SCALE)
and its true capacity is printed next to the answer. `--save` appends the
result, with its configuration, to the capacity history.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from dataclasses import asdict, replace
from typing import Any

from tui.bench.capacity.answer import truth_text
from tui.bench.capacity.driver import CapacityProcess, GpuRecorder
from tui.bench.capacity.history import append_capacity
from tui.bench.capacity.search import CapacitySlo, parse_slo
from tui.bench.capacity.spec import CapacitySpec
from tui.commands._target import profile_from_args
from tui.commands._width import hanging
from tui.commands.bench_spec import build_spec, check_args, gpu_set
from tui.compose import open_deck
from tui.core.config import BenchmarkSlo
from tui.core.formatting import counted
from tui.gpu.model import GpuSource

# Simulated seconds per real second for `bench --demo --capacity`.
DEMO_TIME_SCALE = 2.0


def slo_from_profile(slo: BenchmarkSlo) -> CapacitySlo:
    return CapacitySlo(**{name: value or None for name, value in asdict(slo).items()})


def _load(level: dict[str, Any]) -> str:
    rate = level.get("request_rate")
    return f"{rate:g}/s" if rate is not None else str(level["concurrency"])


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def format_capacity(result: dict[str, Any]) -> str:
    """The answer, then one line per level: client, server and GPU figures side by side."""
    lines = [hanging("capacity: ", result["answer"])]
    lines.append(
        f"{'load':>7} {'TTFT p99':>9} {'ITL p99':>8} {'tok/s/u':>7} {'out tok/s':>9} "
        f"{'run/wait':>9} {'KV pk':>6} {'GPU %':>5} {'tok/J':>6}  SLO"
    )
    for level in result["levels"]:
        server, gpu = level.get("server") or {}, level.get("gpu") or {}
        queue = f"{server['running_mean']:.0f}/{server['waiting_mean']:.0f}" if server else "-"
        kv = f"{server['kv_usage_peak_pct']:.0f}%" if server else "-"
        util = f"{gpu['util_mean_pct']:.0f}" if gpu else "-"
        per_joule = gpu.get("tokens_per_joule") if gpu else None
        verdict = "ok" if level["meets_slo"] else f"miss: {level['limited_by'] or 'partial'}"
        verdict = "client-bound (not the server's limit)" if level.get("client_bound") else verdict
        lines.append(
            f"{_load(level):>7} {level['ttft_p99_ms']:>9,.0f} {level['itl_p99_ms']:>8,.0f} "
            f"{level['per_user_tok_s']:>7,.1f} {level['output_throughput']:>9,.0f} "
            f"{queue:>9} {kv:>6} {util:>5} "
            f"{'-' if per_joule is None else format(per_joule, '.2f'):>6}  {verdict}"
        )
    reuse = []
    for level in result["levels"]:
        intended = level.get("intended_prefix_hit_rate_pct")
        if intended is not None:
            measured = (level.get("server") or {}).get("prefix_hit_rate_pct")
            reuse.append(f"{_load(level)}: {intended:.0f}% / {_pct(measured)}")
    if reuse:
        lines.append(hanging("prefix-cache hit rate, intended / measured: ", ", ".join(reuse)))
    if truth := truth_text(result):
        lines.append(truth)
    if result.get("time_scale", 1.0) != 1.0:
        lines.append(
            f"fast clock x{result['time_scale']:g}: {result['simulated_s']:,.0f} s simulated "
            f"in {result['wall_s']:,.0f} s"
        )
    if result.get("partial"):
        lines.append("PARTIAL: cancelled; the levels that finished are kept")
    return "\n".join(lines)


async def _search(spec: CapacitySpec, gpus: GpuSource | None, progress: bool) -> dict[str, Any]:
    process = CapacityProcess(spec)
    recorder = GpuRecorder(gpus)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, process.cancel)
    try:
        async for event in process.events():
            recorder.on_event(event)
            if progress and event.get("event") == "level_start":
                rate = event.get("request_rate")
                load = f"{rate:g} requests/s" if rate else _users(event["concurrency"])
                print(f"measuring {load} ...", file=sys.stderr)
    finally:
        recorder.close()
        loop.remove_signal_handler(signal.SIGINT)
    assert process.result is not None
    return recorder.annotate(process.result)


async def _run(args: argparse.Namespace, slo_text: str | None, progress: bool) -> dict[str, Any]:
    if args.url:
        spec = build_spec(args)
        slo = parse_slo(slo_text or "")
        return await _search(CapacitySpec(spec, slo=slo, by=args.by), None, progress)
    profile = profile_from_args(args)
    check_args(args, profile.benchmark.presets)
    slo = parse_slo(slo_text or "", slo_from_profile(profile.benchmark.slo))
    deck = open_deck(
        profile,
        demo_autostart=True,
        demo_wait_ready=True,
        demo_time_scale=DEMO_TIME_SCALE,
    )
    try:
        spec = build_spec(args, deck, await deck.reachable_base_url(), await gpu_set(deck))
        spec = replace(spec, warmup_requests=0)
        return await _search(
            CapacitySpec(spec, slo=slo, by=args.by), await deck.gpu_source(), progress
        )
    finally:
        await deck.close()


def run_capacity(args: argparse.Namespace) -> int:
    """The `--capacity` branch of `servedeck bench`."""
    slo_text = getattr(args, "slo", None)
    if slo_text is not None:
        parse_slo(slo_text)  # a bad --slo fails before any server is started
    progress = sys.stderr.isatty() and not args.json
    result = asyncio.run(_run(args, slo_text, progress))
    saved = append_capacity(result) if args.save else None
    print(json.dumps(result, indent=2) if args.json else format_capacity(result))
    if not args.json and saved is not None:
        print(hanging("saved to ", str(saved)))
    why = measured_nothing(result["levels"])
    if why:
        print(f"servedeck: error: capacity: {why}", file=sys.stderr)
        return 1
    return 0


def measured_nothing(levels: list[dict[str, Any]]) -> str | None:
    """Why the search measured nothing (no level, or not one request answered), else None:
    such a run exits 1, as `bench` does when every request failed."""
    if not levels:
        return "no level was measured"
    if any(level.get("completed", 0) for level in levels):
        return None
    failed = sum(level.get("failed", 0) for level in levels)
    return f"every request failed ({counted(failed, 'request')} in {counted(len(levels), 'level')})"


def _users(concurrency: object) -> str:
    """'1 user', '31 users'; what is not a count is shown as it came."""
    return counted(concurrency, "user") if isinstance(concurrency, int) else f"{concurrency} users"
