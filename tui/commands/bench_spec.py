"""A benchmark's spec from `servedeck bench`'s arguments: checked, with its dataset, trace,
tokenizer, LoRA adapters and lengths, and the GPUs it ran on.

`servedeck bench --capacity` builds its spec here too (tui/commands/capacity_cmd.py).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from tui.bench.adapters import AdapterSpecError, parse_adapters
from tui.bench.context import context_for_profile
from tui.bench.lengths import LengthSpecError
from tui.bench.model import RunContext
from tui.bench.repeats import SETTLE_RUNS
from tui.bench.workload import BenchSpec, spec_from_preset
from tui.core.config import BenchmarkPreset, default_presets, percentiles_problem
from tui.core.errors import ServedeckError, UsageError
from tui.deck import Deck


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
    path = getattr(args, "dataset", None)
    if getattr(args, "workload", None) != "dataset":
        if path:
            raise UsageError("--dataset needs --workload dataset")
        return None
    from tui.bench.workloads import DatasetError, load_sharegpt

    if not path:
        raise UsageError("--workload dataset needs --dataset FILE (ShareGPT-format JSON)")
    try:
        load_sharegpt(path)
    except DatasetError as error:
        raise UsageError(f"--dataset {error}") from None
    return os.path.abspath(path)


def _trace_path(args: argparse.Namespace) -> str | None:
    """The --trace file, checked now (a one-line error naming it and the line)."""
    path = getattr(args, "trace", None)
    if getattr(args, "workload", None) != "trace":
        if path:
            raise UsageError("--trace needs --workload trace")
        return None
    from tui.bench.trace import load_trace
    from tui.bench.workloads import DatasetError

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
    try:
        lengths = spec.lengths()
    except LengthSpecError as error:
        raise UsageError(str(error)) from None
    if lengths.varies and spec.workload != "random":
        raise UsageError("--input-dist, --output-dist and --mix need --workload random")
    if lengths.varies and getattr(args, "capacity", False):
        raise UsageError("--input-dist, --output-dist and --mix are not for --capacity")


async def gpu_set(deck: Deck) -> str:
    """ "8 x NVIDIA H200" style description of the deck's GPUs ("" when unknown)."""
    try:
        snapshot = await (await deck.gpu_source()).sample()
    except ServedeckError:
        return ""
    names = [static.name for static in snapshot.statics]
    return f"{len(names)} x {names[0]}" if names and snapshot.available else ""
