"""`servedeck status`: unit state, load phase, readiness and metrics in one look."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from tui.cli import run_async
from tui.commands._target import open_host, require_demo_support, resolve_profile
from tui.errors import ServedeckError
from tui.loadwatch import LoadTracker
from tui.logs.journal import read_journal
from tui.logs.tail import follow_file
from tui.metrics import MetricsPoller, metrics_from_log
from tui.readiness import ReadinessProbe
from tui.service import read_unit_state


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "status", parents=[common], help="unit state, load phase, readiness, metrics"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("-n", "--lines", type=int, default=2000, help="log lines to read (2000)")
    parser.set_defaults(func=run_status)


async def collect_status(args: argparse.Namespace) -> dict[str, Any]:
    profile = resolve_profile(args)
    host = open_host(profile)
    service = profile.service
    report: dict[str, Any] = {"profile": profile.name, "host": host.label, "errors": []}
    try:
        if service.unit:
            try:
                unit = await read_unit_state(host, service.unit)
                report["unit"] = dataclasses.asdict(unit)
            except ServedeckError as error:
                report["errors"].append(str(error))
        tracker = LoadTracker()
        try:
            if service.unit:
                lines = await read_journal(host, service.unit, lines=args.lines)
            elif service.log_file:
                lines = [
                    line
                    async for line in follow_file(
                        host, service.log_file, initial_lines=args.lines, follow=False
                    )
                ]
            else:
                lines = []
            tracker.feed_many(lines)
        except ServedeckError as error:
            report["errors"].append(str(error))
        progress = tracker.snapshot()
        report["load"] = dataclasses.asdict(progress) if lines else None
        readiness = await ReadinessProbe(service.base_url).check(progress if lines else None)
        report["readiness"] = dataclasses.asdict(readiness)
        metrics = None
        if readiness.health_ok:
            try:
                metrics = await MetricsPoller(service.base_url).poll()
            except ServedeckError as error:
                report["errors"].append(str(error))
        if metrics is None and progress.engine_stats is not None:
            metrics = metrics_from_log(progress.engine_stats)
        report["metrics"] = dataclasses.asdict(metrics) if metrics else None
    finally:
        await host.close()
    return report


def _text(report: dict[str, Any]) -> str:
    out = [f"profile {report['profile']} on {report['host']}"]
    unit = report.get("unit")
    if unit:
        out.append(
            f"unit    {unit['unit']}: {unit['active_state']} ({unit['sub_state']}), "
            f"pid {unit['main_pid'] or '-'}, restarts {unit['n_restarts']}"
        )
    load = report.get("load")
    if load:
        shards = (
            f", shard {load['shards_done']}/{load['shards_total']}" if load["shards_total"] else ""
        )
        out.append(f"load    {load['phase']}{shards}")
        if load["failure_line"]:
            out.append(f"failure {load['failure_line']}")
    ready = report["readiness"]
    if ready["checked"]:
        state = "ready" if ready["health_ok"] else f"not answering ({ready['error']})"
        out.append(f"http    {state}; models: {', '.join(ready['models']) or '-'}")
    metrics = report.get("metrics")
    if metrics:
        out.append(
            f"metrics running {metrics['running_reqs']}, waiting {metrics['waiting_reqs']}, "
            f"KV {metrics['kv_cache_usage_pct']}% ({metrics['source']})"
        )
    out.extend(f"warning {error}" for error in report["errors"])
    return "\n".join(out)


def run_status(args: argparse.Namespace) -> int:
    if args.demo:
        require_demo_support()
    report = run_async(lambda: collect_status(args))
    assert isinstance(report, dict)
    print(json.dumps(report, default=str, indent=2) if args.json else _text(report))
    return 0
