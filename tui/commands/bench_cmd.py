"""`servedeck bench`: run a benchmark preset against a profile's server, a URL or the demo."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from dataclasses import replace
from pathlib import Path

from tui.bench.driver import BenchProcess, BenchProgress, BenchStarted
from tui.bench.export import result_to_json
from tui.bench.history import append_result
from tui.bench.html_report import html_report
from tui.bench.model import BenchResult, LevelResult
from tui.bench.repeats import settled, summarize_repeats
from tui.bench.workload import BenchSpec
from tui.commands._target import deck_from_args, profile_from_args
from tui.commands._width import hanging
from tui.commands.bench_output import format_result
from tui.commands.bench_spec import build_spec, check_args, gpu_set
from tui.commands.compare_cmd import run_compare
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError, UsageError
from tui.core.redact import redact_text
from tui.fleet.actions import ReadOnlyRefused


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "bench",
        parents=[common],
        help="benchmark the server (vLLM `bench serve` metrics) and optionally save the result",
    )
    parser.add_argument(
        "operands", nargs="*", metavar="compare A B", help="compare two runs of the history"
    )
    parser.add_argument("--url", help="server base URL (instead of a profile)")
    parser.add_argument("--model", help="model name to request (default: first of /v1/models)")
    parser.add_argument("--preset", help="preset name (quick, sweep, prefill, rate or a profile's)")
    parser.add_argument("--concurrency", type=int, nargs="+", metavar="N", help="levels")
    parser.add_argument("--num-requests", type=int, metavar="N", help="requests per level")
    parser.add_argument(
        "--input-tokens",
        type=int,
        metavar="N",
        help="prompt tokens a request (default: the preset's)",
    )
    parser.add_argument(
        "--output-tokens",
        type=int,
        metavar="N",
        help="tokens generated a request (default: the preset's)",
    )
    parser.add_argument(
        "--timeout", type=float, metavar="S", help="fail a request after S s without a token"
    )
    parser.add_argument(
        "--request-timeout", type=float, metavar="S", help="total deadline of one request"
    )
    parser.add_argument(
        "--run-timeout", type=float, metavar="S", help="stop the run (partial) after S s"
    )
    parser.add_argument(
        "--percentiles",
        metavar="LIST",
        help="latency percentiles to report, e.g. 50,90,95,99 (vLLM's --metric-percentiles; "
        "default: the profile's [benchmark] percentiles, else 90,95,99)",
    )
    parser.add_argument("--json", action="store_true", help="print vLLM-style JSON only")
    parser.add_argument(
        "--report", metavar="FILE.html", help="also write a self-contained HTML report (charts)"
    )
    parser.add_argument(
        "--requests", metavar="FILE", help="also write every request to FILE.csv or FILE.jsonl"
    )
    parser.add_argument("--save", action="store_true", help="append the result to the history")
    parser.add_argument(
        "--workload",
        choices=("random", "shared-prefix", "chat", "dataset", "trace"),
        help="prompt preset",
    )
    parser.add_argument("--trace", metavar="FILE", help="trace: a JSONL trace (Mooncake fields)")
    parser.add_argument("--trace-speed", type=float, metavar="X", help="trace: replay speed")
    parser.add_argument("--dataset", metavar="FILE", help="dataset: a ShareGPT-format JSON file")
    parser.add_argument("--chat-turns", type=int, metavar="T", help="chat: turns per conversation")
    parser.add_argument("--prefix-groups", type=int, metavar="G", help="shared-prefix groups")
    parser.add_argument("--prefix-tokens", type=int, metavar="S", help="shared-prefix tokens")
    for side in ("input", "output"):
        parser.add_argument(
            f"--{side}-dist",
            choices=("fixed", "normal", "uniform", "lognormal"),
            help=f"random workload: how {side} lengths spread around --{side}-tokens",
        )
        parser.add_argument(
            f"--{side}-stddev", type=float, metavar="S", help=f"normal/lognormal {side} sd"
        )
        parser.add_argument(
            f"--{side}-range", metavar="LOW:HIGH", help=f"uniform {side} lengths, in tokens"
        )
    parser.add_argument(
        "--mix",
        metavar="LIST",
        help="random workload: request classes NAME:SHARE:IN/OUT, e.g. "
        "chat:0.8:512/256,rag:0.2:8192/256",
    )
    parser.add_argument("--seed", type=int, metavar="N", help="seed of prompts and lengths")
    parser.add_argument(
        "--repeat",
        type=int,
        metavar="N",
        help="run the whole workload N times (each its own seed) and report each figure's "
        "spread across runs",
    )
    parser.add_argument(
        "--settle",
        type=float,
        metavar="PCT",
        help="with --repeat: stop once the last 3 runs' output tok/s and TTFT p50 agree "
        "within PCT %% of their median",
    )
    parser.add_argument(
        "--lora",
        metavar="LIST",
        help="send requests across LoRA adapters NAME[:WEIGHT],... (round robin, or weighted); "
        "each must be listed by the server's /v1/models",
    )
    parser.add_argument(
        "--tokenizer",
        metavar="PATH",
        help="the model's tokenizer.json (or its folder) for exact prompt lengths "
        "(needs the tokenizers package; default: the served model's path, else /tokenize)",
    )
    parser.add_argument(
        "--capacity",
        action="store_true",
        help="find how many concurrent users meet the SLO (one-sentence answer)",
    )
    parser.add_argument(
        "--by",
        choices=("concurrency", "rate"),
        default="concurrency",
        help="with --capacity: search over concurrent users (default) or request rate",
    )
    parser.add_argument(
        "--slo",
        metavar="LIST",
        help="with --capacity: e.g. ttft_p99_ms=2000,itl_p99_ms=100,min_user_tok_s=20 "
        "(default: the profile's [benchmark.slo]; a value of off drops one)",
    )
    parser.set_defaults(func=_bench)


async def _drive_runs(
    spec: BenchSpec, show_progress: bool, repeat: int | None, settle_pct: float | None
) -> BenchResult:
    """One run, or `repeat` runs (seed, seed + 1, ...) with their spread in
    client["repeat"] of the last run's result; fewer once settled or after a partial run."""
    if not repeat or repeat <= 1:
        return await _drive(spec, show_progress)
    runs: list[BenchResult] = []
    stopped = "all runs"
    for number in range(repeat):
        if show_progress:
            print(f"run {number + 1}/{repeat}", file=sys.stderr)
        runs.append(await _drive(replace(spec, seed=spec.seed + number), show_progress))
        if runs[-1].partial:
            stopped = f"run {number + 1} partial"
            break
        if settle_pct is not None and number + 1 < repeat and settled(runs, settle_pct):
            stopped = f"settled after {number + 1} runs"
            break
    summary = summarize_repeats(runs, repeat, settle_pct, stopped)
    last = runs[-1]
    return replace(last, client={**last.client, "repeat": summary.to_dict()})


async def _drive(spec: BenchSpec, show_progress: bool) -> BenchResult:
    process = BenchProcess(spec)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, process.cancel)
    try:
        async for event in process.events():
            if not show_progress:
                continue
            if isinstance(event, BenchStarted):
                print(f"model {event.model}, prompts by {event.prompt_method}", file=sys.stderr)
            elif isinstance(event, BenchProgress):
                load = "warm-up" if event.level < 0 else f"c={event.concurrency}"
                print(
                    f"\r{load}: {event.done}/{event.total} done, {event.failed} failed, "
                    f"{event.tok_s:,.0f} tok/s, {event.elapsed_s:.0f} s   ",
                    end="",
                    file=sys.stderr,
                )
            elif isinstance(event, LevelResult):
                print("", file=sys.stderr)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    assert process.result is not None
    return process.result


async def _bench_profile(args: argparse.Namespace, show_progress: bool) -> BenchResult:
    check_args(args, profile_from_args(args).benchmark.presets)
    deck = deck_from_args(args)
    try:
        spec = build_spec(args, deck, await deck.reachable_base_url(), await gpu_set(deck))
        return await _drive_runs(spec, show_progress, args.repeat, args.settle)
    finally:
        await deck.close()


def refuse_read_only(args: argparse.Namespace) -> None:
    """A benchmark loads the server: `--read-only` or a read-only profile refuses it, audited."""
    if args.url:
        read_only, label = bool(getattr(args, "read_only", False)), redact_text(args.url)
    else:
        profile = profile_from_args(args)
        read_only, label = profile.read_only, profile.host_label
    if not read_only:
        return
    what = "capacity search" if args.capacity else "benchmark"
    append_audit("bench.refused", label, {"action": what, "reason": "read-only mode"})
    raise ReadOnlyRefused(f"{label}: read-only: a {what} loads the server and is refused")


def _bench(args: argparse.Namespace) -> int:
    if args.operands:
        return run_compare(args)
    refuse_read_only(args)
    if args.capacity:
        from tui.commands.capacity_cmd import run_capacity

        if getattr(args, "lora", None):
            raise UsageError("--lora is not for --capacity: the search's users ask one model")

        return run_capacity(args)
    if args.slo is not None:
        raise UsageError("--slo needs --capacity")
    show_progress = sys.stderr.isatty() and not args.json
    if args.url:
        spec = build_spec(args)
        result = asyncio.run(_drive_runs(spec, show_progress, args.repeat, args.settle))
    else:
        result = asyncio.run(_bench_profile(args, show_progress))
    saved = append_result(result) if args.save else None
    if getattr(args, "report", None):
        try:
            Path(args.report).write_text(html_report(result), encoding="utf-8")
        except OSError as error:
            raise ServedeckError(f"--report {args.report}: {error.strerror or error}") from None
    print(result_to_json(result) if args.json else format_result(result))
    if not args.json and saved is not None:
        print(hanging("saved to ", str(saved)))
    failed_everything = all(level.completed == 0 for level in result.levels)
    return 1 if failed_everything else 0
