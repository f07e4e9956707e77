"""`servedeck bench`: run a benchmark preset against a profile's server, a URL or the demo."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from tui.bench.adapters import AdapterSpecError, parse_adapters
from tui.bench.context import context_for_profile
from tui.bench.driver import BenchProcess, BenchProgress, BenchStarted
from tui.bench.export import result_to_json
from tui.bench.history import append_result
from tui.bench.html_report import html_report
from tui.bench.model import BenchResult, LevelResult, RunContext
from tui.bench.repeats import (
    SETTLE_RUNS,
    repeat_lines,
    settled,
    summarize_repeats,
    summary_from_dict,
)
from tui.bench.report import report_lines
from tui.bench.workload import BenchSpec, spec_from_preset
from tui.commands._target import deck_from_args, profile_from_args
from tui.commands._width import hanging
from tui.core.config import BenchmarkPreset, default_presets, percentiles_problem
from tui.core.errors import ServedeckError, UsageError
from tui.deck import Deck


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


def _positive(name: str, value: int | float | None) -> None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise UsageError(f"--{name} must be positive, got {value}")


def check_args(args: argparse.Namespace, presets: Mapping[str, BenchmarkPreset] | None) -> None:
    """Refuse bad numbers and unknown presets before anything (a simulator) is started."""
    numbers = ("num_requests", "input_tokens", "output_tokens", "timeout")
    for name in (*numbers, "prefix_groups", "prefix_tokens", "chat_turns", "trace_speed"):
        _positive(name.replace("_", "-"), getattr(args, name, None))
    for name in ("request_timeout", "run_timeout"):
        _positive(name.replace("_", "-"), getattr(args, name, None))
    for level in args.concurrency or ():
        _positive("concurrency", level)
    _check_repeat(args)
    parse_percentiles(getattr(args, "percentiles", None))
    _output_file("report", getattr(args, "report", None), (".html", ".htm"))
    _output_file("requests", getattr(args, "requests", None), (".csv", ".jsonl"))
    known = default_presets() if presets is None else presets
    if args.preset is not None and args.preset not in known:
        raise UsageError(
            f"unknown preset {args.preset!r}; known presets: {', '.join(sorted(known))}"
        )


def _check_repeat(args: argparse.Namespace) -> None:
    """--repeat and --settle: positive, and only where runs can be compared."""
    repeat, settle = getattr(args, "repeat", None), getattr(args, "settle", None)
    _positive("repeat", repeat)
    _positive("settle", settle)
    if settle is not None and (repeat or 1) < SETTLE_RUNS + 1:
        raise UsageError(
            f"--settle needs --repeat {SETTLE_RUNS + 1} or more (it compares the last {SETTLE_RUNS} runs)"
        )
    if (repeat or 1) > 1 and getattr(args, "capacity", False):
        raise UsageError(
            "--repeat is not for --capacity: each search picks its own levels from what it "
            "measures, so the runs' levels would not line up"
        )
    if (repeat or 1) > 1 and getattr(args, "requests", None):
        raise UsageError("--requests is for one run; not with --repeat")


def _output_file(flag: str, path: str | None, suffixes: tuple[str, ...]) -> None:
    """A file the run will write: the right suffix, and writable now (not after the run)."""
    if not path:
        return
    if Path(path).suffix.lower() not in suffixes:
        raise UsageError(f"--{flag} {path}: expected a {' or '.join(suffixes)} file")
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as error:
        raise UsageError(f"--{flag} {path}: {error.strerror or error}") from None


def parse_percentiles(text: str | None) -> tuple[float, ...] | None:
    """`--percentiles 50,90,95,99` as sorted numbers; a bad list is a one-line UsageError."""
    if text is None:
        return None
    try:
        values = [float(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise UsageError(f"--percentiles expects numbers like 50,90,99, got {text!r}") from None
    problem = percentiles_problem(values)
    if problem:
        raise UsageError(f"--percentiles: {problem}")
    return tuple(sorted(set(values)))


def _dataset_path(args: argparse.Namespace) -> str | None:
    """The --dataset file, checked now (a one-line error naming it), absolute for the runner."""
    from tui.bench.workloads import DatasetError, load_sharegpt

    path = getattr(args, "dataset", None)
    if getattr(args, "workload", None) != "dataset":
        if path:
            raise UsageError("--dataset needs --workload dataset")
        return None
    if not path:
        raise UsageError("--workload dataset needs --dataset FILE (ShareGPT-format JSON)")
    try:
        load_sharegpt(path)
    except DatasetError as error:
        raise UsageError(f"--dataset {error}") from None
    return os.path.abspath(path)


def _trace_path(args: argparse.Namespace) -> str | None:
    """The --trace file, checked now (a one-line error naming it and the line)."""
    from tui.bench.trace import load_trace
    from tui.bench.workloads import DatasetError

    path = getattr(args, "trace", None)
    if getattr(args, "workload", None) != "trace":
        if path:
            raise UsageError("--trace needs --workload trace")
        return None
    if not path:
        raise UsageError("--workload trace needs --trace FILE (JSONL)")
    try:
        load_trace(path)
    except DatasetError as error:
        raise UsageError(f"--trace {error}") from None
    return os.path.abspath(path)


def _tokenizer_path(args: argparse.Namespace) -> str | None:
    """--tokenizer, checked now: a tokenizer.json, or a folder holding one."""
    path = getattr(args, "tokenizer", None)
    if not path:
        return None
    found = Path(path)
    if not (found.is_file() or (found / "tokenizer.json").is_file()):
        raise UsageError(f"--tokenizer {path}: no tokenizer.json there")
    return os.path.abspath(path)


def build_spec(
    args: argparse.Namespace, deck: Deck | None = None, base_url: str = "", gpus: str = ""
) -> BenchSpec:
    """Turn the command line (and the deck of the profile it names) into a BenchSpec."""
    check_args(args, None if deck is None else deck.profile.benchmark.presets)
    percentiles = parse_percentiles(getattr(args, "percentiles", None))
    if args.url:
        presets: dict[str, BenchmarkPreset] = default_presets()
        default_name = "quick"
        base_url = args.url
        context = RunContext(profile="(url)", host=args.url, base_url=args.url)
        api_key_env = None
    else:
        assert deck is not None, "a profile run needs its deck"
        profile = deck.profile
        presets = dict(profile.benchmark.presets)
        default_name = profile.benchmark.default_preset
        base_url = base_url or profile.service.base_url
        context = replace(context_for_profile(profile, gpus), host=deck.host_label)
        api_key_env = profile.service.api_key_env
        percentiles = percentiles or profile.benchmark.percentiles
    name = args.preset or default_name
    if name not in presets:
        known = ", ".join(sorted(presets))
        raise UsageError(f"unknown preset {name!r}; known presets: {known}")
    spec = spec_from_preset(
        presets[name],
        base_url,
        model=args.model or "",
        concurrency=tuple(args.concurrency) if args.concurrency else None,
        num_requests=args.num_requests,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        read_timeout_s=args.timeout,
        request_timeout_s=getattr(args, "request_timeout", None),
        run_timeout_s=getattr(args, "run_timeout", None),
        workload=getattr(args, "workload", None),
        prefix_groups=getattr(args, "prefix_groups", None),
        prefix_tokens=getattr(args, "prefix_tokens", None),
        chat_turns=getattr(args, "chat_turns", None),
        dataset_path=_dataset_path(args),
        trace_path=_trace_path(args),
        trace_speed=getattr(args, "trace_speed", None),
        tokenizer_path=_tokenizer_path(args),
        api_key_env=api_key_env,
        context=replace(context, base_url=base_url),
        percentiles=percentiles,
        seed=getattr(args, "seed", None),
        requests_path=os.path.abspath(args.requests) if getattr(args, "requests", None) else None,
        mix=getattr(args, "mix", None),
        lora=_lora(args),
        **_length_flags(args),
    )
    _check_lengths(spec, args)
    return spec


def _lora(args: argparse.Namespace) -> str | None:
    """--lora, checked now: well formed, and only where each request can name its adapter."""
    text = getattr(args, "lora", None)
    if text is None:
        return None
    try:
        parse_adapters(text)
    except AdapterSpecError as error:
        raise UsageError(str(error)) from None
    if getattr(args, "workload", None) == "chat":
        raise UsageError("--lora is not for --workload chat (a conversation keeps one model)")
    return text


def _length_flags(args: argparse.Namespace) -> dict[str, object]:
    names = [
        f"{side}_{part}" for side in ("input", "output") for part in ("dist", "stddev", "range")
    ]
    return {name: getattr(args, name, None) for name in names}


def _check_lengths(spec: BenchSpec, args: argparse.Namespace) -> None:
    """Length distributions and mixes: well formed, and only where they apply."""
    from tui.bench.lengths import LengthSpecError

    try:
        lengths = spec.lengths()
    except LengthSpecError as error:
        raise UsageError(str(error)) from None
    if lengths.varies and spec.workload != "random":
        raise UsageError("--input-dist, --output-dist and --mix need --workload random")
    if lengths.varies and getattr(args, "capacity", False):
        raise UsageError("--input-dist, --output-dist and --mix are not for --capacity")


def _ms(value: float) -> str:
    return f"{value:,.1f}"


def format_level(level: LevelResult) -> str:
    """One level per line, 80 columns at most; `*` after the load marks a partial level."""
    load = f"c={level.concurrency}" if level.request_rate is None else f"{level.request_rate:g}/s"
    load += "*" if level.partial else ""
    load += "!" if level.client_bound else ""
    return (
        f"{load:>7} {level.completed:>5}/{level.num_requests:<5} {level.failed:>4} "
        f"{_ms(level.ttft.median_ms):>8} {_ms(level.ttft.p99_ms):>8} "
        f"{_ms(level.tpot.median_ms):>8} {_ms(level.itl.p99_ms):>8} "
        f"{level.output_throughput:>9,.1f} {level.request_throughput:>6.2f}"
    )


def _input_words(result: BenchResult) -> str:
    """The prompt tokens actually sent (the server's count), and the target when it differs."""
    sent = result.input_tokens_sent
    if sent is None or sent == result.input_tokens:
        return f"{result.input_tokens} tok"
    return f"{sent} tok sent (asked {result.input_tokens})"


def format_result(result: BenchResult) -> str:
    context = result.context
    lines = [
        hanging(
            "servedeck bench: ",
            f"{result.preset} on {context.host or context.base_url}  model {context.model}  "
            f"{context.engine} {context.engine_version}".rstrip(),
        ),
        hanging(
            "  ",
            f"input {_input_words(result)}, output {result.output_tokens} tok, "
            f"{result.endpoint}, temperature {result.temperature:g}, ignore_eos {result.ignore_eos}",
        ),
        f"{'load':>7} {'ok/sent':>11} {'fail':>4} {'TTFT p50':>8} {'TTFT p99':>8} "
        f"{'TPOT p50':>8} {'ITL p99':>8} {'out tok/s':>9} {'req/s':>6}",
    ]
    lines += [format_level(level) for level in result.levels]
    for level in result.levels:
        lines += report_lines(level)
    for level in result.levels:
        if level.errors:
            lines.append(f"  c={level.concurrency}: first error: {level.errors[0]}")
        server = level.server
        if server and server.requests:
            parts = [
                f"{label} {value:,.1f} ms"
                for label, value in (
                    ("queue", server.mean_queue_ms),
                    ("prefill", server.mean_prefill_ms),
                    ("decode", server.mean_decode_ms),
                )
                if value is not None
            ]
            lines.append(f"  c={level.concurrency}: server mean " + ", ".join(parts))
    single = result.single_stream_tok_s
    if single:
        lines.append(f"single stream {single:,.1f} tok/s (output tok/s at concurrency 1)")
    decode = result.decode_tok_s_per_stream
    if decode:
        lines.append(f"decode {decode:,.1f} tok/s per stream (1 / mean TPOT at concurrency 1)")
    prefill = [lv.prefill_tok_s_per_request for lv in result.levels if lv.concurrency == 1]
    if prefill and prefill[0]:
        lines.append(f"prefill {prefill[0]:,.0f} prompt tok/s per request (prompt / TTFT)")
    if result.client.get("lengths"):
        lines.append(f"lengths per request: {result.client['lengths']} tok")
    method = result.client.get("prompt_method")
    if method:
        lines.append(f"prompt tokens: {method}")
    if result.levels and result.levels[0].output_tokens_source != "usage":
        lines.append(f"output tokens: {result.levels[0].output_tokens_source}")
    intended = result.client.get("intended_prefix_hit_rate")
    if intended is not None:
        measured = result.client.get("measured_prefix_hit_rate")
        shown = "n/a (no prefix-cache metrics)" if measured is None else f"{100 * measured:.1f}%"
        lines.append(
            f"prefix cache hit rate: measured {shown}, intended {100 * intended:.1f}% "
            f"({result.client.get('workload')}; reset: {result.client.get('prefix_cache_reset')})"
        )
    bound = [lv for lv in result.levels if lv.client_bound]
    if bound:
        loads = ", ".join(f"c={lv.concurrency}" for lv in bound)
        lines.append(f"! CLIENT-BOUND at {loads}: the client's limit, not the server's")
    if result.partial:
        lines.append("PARTIAL: the run was cancelled or did not finish every level")
    repeats = summary_from_dict(result.client.get("repeat"))
    if repeats is not None:
        lines += repeat_lines(repeats)
    return "\n".join(lines)


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


async def gpu_set(deck: Deck) -> str:
    """ "8 x NVIDIA H200" style description of the deck's GPUs ("" when unknown)."""
    try:
        snapshot = await (await deck.gpu_source()).sample()
    except ServedeckError:
        return ""
    names = [static.name for static in snapshot.statics]
    return f"{len(names)} x {names[0]}" if names and snapshot.available else ""


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
    from tui.core.audit import append_audit
    from tui.core.redact import redact_text
    from tui.fleet.actions import ReadOnlyRefused

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
        from tui.commands.compare_cmd import run_compare

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
