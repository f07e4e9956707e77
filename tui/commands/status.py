"""`servedeck status`: unit state, load phase, readiness and metrics in one look."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from tui.cli import run_async
from tui.commands._target import deck_from_args
from tui.commands._width import hanging
from tui.commands.progress_now import progress_now
from tui.core.errors import CommandTimeout, HostError, ServedeckError
from tui.core.redact import redact_data
from tui.deck import Deck
from tui.ops.load_explain import load_explain_report
from tui.ops.restart_guard import leftovers_note
from tui.serving.disagg import pd_warnings, role_from_log, role_from_metrics
from tui.serving.engines import idle_engine_warnings
from tui.serving.load.tracker import LoadTracker, silence_note
from tui.serving.load.waterfall import waterfall_lines
from tui.serving.lora import lora_line
from tui.serving.metrics import MetricsPoller, metrics_from_log
from tui.serving.prefix_cache import args_from_log, explain_metrics
from tui.serving.readiness import ReadinessProbe


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "status",
        parents=[common],
        help="unit state, load phase, readiness, metrics",
        epilog="exit status: 0 the server answers /health; 1 it does not (stopped, "
        "loading or failing); 3 the host could not be reached.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("-n", "--lines", type=int, default=2000, help="log lines to read (2000)")
    parser.set_defaults(func=run_status)


async def collect_status(args: argparse.Namespace) -> dict[str, Any]:
    """`servedeck status --json` of the profile the arguments name (its deck opened and closed)."""
    deck = deck_from_args(args)
    try:
        return await status_report(deck, args.lines)
    finally:
        await deck.close()


async def status_report(deck: Deck, log_lines: int = 2000) -> dict[str, Any]:
    """The status of an open deck as plain data, redacted (the CLI's JSON, the MCP tool)."""
    profile = deck.profile
    service = profile.service
    report: dict[str, Any] = {
        "profile": profile.name,
        "host": deck.host_label,
        "host_reachable": True,
        "errors": [],
    }

    def failed(error: ServedeckError) -> None:
        report["errors"].append(str(error))
        if isinstance(error, HostError) and not isinstance(error, CommandTimeout):
            report["host_reachable"] = False

    unit_running: bool | None = None  # no unit, or its state unread
    controller = deck.service()
    if controller is not None:
        try:
            unit = await controller.state()
            unit_running = unit.is_active
            report["unit"] = dataclasses.asdict(unit)
            if not unit.is_active:
                report["leftovers"] = await leftovers_note(deck)
        except ServedeckError as error:
            failed(error)
    tracker = LoadTracker()
    tracker.observe_unit(unit_running)
    lines = []
    try:
        source = deck.replay_log_lines(initial_lines=log_lines)
        if source is not None:
            lines = [line async for line in source]
        tracker.feed_many(lines)
    except ServedeckError as error:
        failed(error)
    progress = tracker.snapshot()
    report["load"] = dataclasses.asdict(progress) if lines else None
    main_pid = (report.get("unit") or {}).get("main_pid")
    started = (report.get("unit") or {}).get("started_at_s")
    report["load_explain"] = await load_explain_report(deck, progress, main_pid, started)
    base_url = service.base_url
    try:
        base_url = await deck.reachable_base_url()
    except ServedeckError as error:
        failed(error)
    readiness = await ReadinessProbe(base_url).check(progress if lines else None)
    report["readiness"] = dataclasses.asdict(readiness)
    metrics = None
    if readiness.health_ok:
        try:
            metrics = await MetricsPoller(base_url).poll()
        except ServedeckError as error:
            report["errors"].append(str(error))
    if metrics is None and progress.engine_stats is not None:
        metrics = metrics_from_log(progress.engine_stats)
    report["metrics"] = dataclasses.asdict(metrics) if metrics else None
    # One row per `engine` label (data-parallel ranks); null when /metrics was not read.
    engines = metrics.engines if metrics is not None and metrics.source == "metrics" else None
    report["engines"] = [dataclasses.asdict(e) for e in engines] if engines is not None else None
    report["engine_warnings"] = list(idle_engine_warnings(engines or ()))
    # P/D: the role (the log's kv_role, else what /metrics shows), NIXL figures, warnings.
    transfers = metrics.kv_transfers if metrics is not None else ()
    role = role_from_log([line.text for line in lines]) or role_from_metrics(transfers)
    report["kv_role"] = role
    report["kv_transfers"] = [dataclasses.asdict(t) for t in transfers] if role else None
    report["engine_warnings"] += list(pd_warnings(role, transfers, engines or ()))
    # Why the prefix cache misses, when /metrics or the log's args can tell; null otherwise.
    cache = None
    if metrics is not None and metrics.source == "metrics":
        cache = explain_metrics(metrics, args_from_log([line.text for line in lines]))
    report["prefix_cache"] = dataclasses.asdict(cache) if cache is not None else None
    # The adapters loaded (/v1/models) and those with requests (vllm:lora_requests_info).
    report["lora"] = lora_line(metrics.lora if metrics else None, readiness.adapters)
    report["progress"] = None
    if readiness.health_ok:
        try:
            verdict = await progress_now(deck, base_url, main_pid)
            report["progress"] = verdict.as_dict()
        except ServedeckError as error:
            report["errors"].append(str(error))
    secrets = (deck.api_key,) if deck.api_key else ()
    report["serving"] = bool(readiness.health_ok)
    # redacted as data, before any rendering (it quotes the same log lines `logs` prints)
    return redact_data(json.loads(json.dumps(report, default=str)), secrets)


def exit_status(report: dict[str, Any]) -> int:
    """0 serving, 1 the server does not answer, 3 the host could not be reached."""
    if not report.get("host_reachable", True):
        return 3
    return 0 if report.get("serving") else 1


def _text(report: dict[str, Any]) -> str:
    # A tuple is a line printed as it is (a waterfall bar), a str is wrapped under its label.
    out: list[str | tuple[str]] = [f"profile {report['profile']} on {report['host']}"]
    unit = report.get("unit")
    if unit:
        out.append(
            f"unit    {unit['unit']}: {unit['active_state']} ({unit['sub_state']}), "
            f"pid {unit['main_pid'] or '-'}, restarts {unit['n_restarts']}"
        )
    if report.get("leftovers"):
        out.append(f"procs   {report['leftovers']}")
    load = report.get("load")
    if load:
        shards = (
            f", shard {load['shards_done']}/{load['shards_total']}" if load["shards_total"] else ""
        )
        out.append(f"load    {load['phase']}{shards}")
        if load.get("silent_since_s") is not None:
            out.append(f"load    {silence_note(load['at_s'] - load['silent_since_s'])}")
        if load["failure_line"]:
            out.append(f"failure {load['failure_line']}")
    explain = report.get("load_explain") or {}
    if explain.get("diagnosis") and explain.get("wall_s"):
        out.append(f"why     {explain['diagnosis']}")
        steps = explain.get("waterfall") or []
        # The load's waterfall: bars on one time axis, printed as they are (not wrapped).
        lines = waterfall_lines(steps, explain.get("earlier_steps_s") or ())
        out.extend((f"  {line}",) for line in lines)
    ready = report["readiness"]
    if ready["checked"]:
        state = "ready" if ready["health_ok"] else f"not answering ({ready['error']})"
        out.append(f"http    {state}; models: {', '.join(ready['models']) or '-'}")
    metrics = report.get("metrics")
    if metrics:
        kv = metrics["kv_cache_usage_pct"]
        out.append(
            f"metrics running {_na(metrics['running_reqs'])}, "
            f"waiting {_na(metrics['waiting_reqs'])}, "
            f"KV {'n/a' if kv is None else f'{kv:.1f}%'} ({metrics['source']})"
        )
        spec = metrics.get("spec_decode")
        if spec:
            rate, length = spec["acceptance_rate"], spec["mean_accepted_length"]
            out.append(
                f"spec    acceptance {'n/a' if rate is None else f'{rate * 100:.0f}%'}, "
                f"mean accepted length {'n/a' if length is None else f'{length:.2f}'}, per position "
                + ("/".join(f"{r * 100:.0f}%" for r in spec["per_position"]) or "n/a")
            )
    engines = report.get("engines") or []
    if len(engines) > 1:
        for engine in engines:
            kv = engine["kv_cache_usage_pct"]
            out.append(
                f"engine  {engine['engine']}: running {_na(engine['running_reqs'])}, "
                f"waiting {_na(engine['waiting_reqs'])}, KV {'n/a' if kv is None else f'{kv:.1f}%'}"
            )
    out.extend(f"warning {warning}" for warning in report.get("engine_warnings") or ())
    if report.get("lora"):
        out.append(f"lora    {report['lora']}")
    if report.get("prefix_cache"):
        out.append(f"cache   {report['prefix_cache']['text']}")
    progress = report.get("progress")
    if progress:
        kind = f": {progress['kind_text']}" if progress.get("kind_text") else ""
        out.append(f"engine  {progress['state']}{kind}")
        out.extend(f"engine    {line}" for line in progress["evidence"][1:])
    out.extend(f"warning {error}" for error in report["errors"])
    if not report.get("host_reachable", True):
        out.append("verdict host unreachable")
    else:
        out.append("verdict " + ("serving" if report.get("serving") else "not serving"))
    return "\n".join(
        line[0] if isinstance(line, tuple) else hanging(line[:8], line[8:]) for line in out
    )


def _na(value: object) -> str:
    return "n/a" if value is None else str(value)


def run_status(args: argparse.Namespace) -> int:
    report = run_async(lambda: collect_status(args))
    assert isinstance(report, dict)
    print(json.dumps(report, default=str, indent=2) if args.json else _text(report))
    return exit_status(report)
