"""`servedeck gpus`: the GPUs of a host as a table or JSON, once or every few seconds."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from typing import Any, TextIO

from tui.commands._target import deck_from_args
from tui.core.errors import UsageError
from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot, GpuSource, total_memory_bytes

GIB = 1024**3


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "gpus",
        parents=[common],
        help="show the GPUs of a host (NVML locally, nvidia-smi over SSH)",
        description="Show every GPU's memory, utilization, temperature, power and processes.",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (units in key names)")
    parser.add_argument("--watch", action="store_true", help="repeat until interrupted")
    parser.add_argument(
        "--interval", type=float, default=1.0, metavar="S", help="seconds between samples"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise UsageError("--interval must be a positive number of seconds")
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 0 if args.watch else 130


async def _open_source(args: argparse.Namespace) -> tuple[GpuSource, Deck]:
    deck = deck_from_args(args)
    return await deck.gpu_source(), deck


async def _run(args: argparse.Namespace) -> int:
    source, deck = await _open_source(args)
    try:
        while True:
            snapshot = await source.sample()
            if args.json:
                print_json(snapshot, sys.stdout, compact=args.watch)
            else:
                if args.watch and sys.stdout.isatty():
                    sys.stdout.write("\x1b[H\x1b[2J")
                print_table(snapshot, sys.stdout)
            sys.stdout.flush()
            if not args.watch:
                return 0 if snapshot.available else 1
            await asyncio.sleep(args.interval)
    finally:
        await deck.close()


def snapshot_dict(snapshot: GpuBoxSnapshot) -> dict[str, Any]:
    """The snapshot as plain data: dataclass field names (units in names) plus gpu_count."""
    data = dataclasses.asdict(snapshot)
    data["gpu_count"] = snapshot.gpu_count
    return data


def print_json(snapshot: GpuBoxSnapshot, out: TextIO, compact: bool = False) -> None:
    data = snapshot_dict(snapshot)
    out.write(json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=2))
    out.write("\n")


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_table(snapshot: GpuBoxSnapshot, out: TextIO) -> None:
    """A plain table, one line per GPU, that fits an 80-column terminal.

    When every GPU has the same name (the usual box) the name is said once in the
    first line instead of taking a column on each row.
    """
    if not snapshot.available:
        out.write(f"GPUs: {snapshot.error or 'not available'}\n")
        return
    statics = {static.index: static for static in snapshot.statics}
    names = {static.name.removeprefix("NVIDIA ") for static in snapshot.statics}
    one_name = names.pop() if len(names) == 1 else None
    versions = f"driver {snapshot.driver_version or '?'}, CUDA {snapshot.cuda_version or '?'}"
    out.write(f"{snapshot.gpu_count} GPUs via {snapshot.source} ({versions})\n")
    if one_name:
        out.write(f"every GPU: {one_name}\n")
    name_column = "" if one_name else f" {'NAME':<18}"
    header = (
        f"{'GPU':>3}{name_column} {'NUMA':>4} {'MEMORY GiB':>11} {'UTIL':>5} "
        f"{'TEMP':>5} {'POWER W':>8} {'PCIE':>5} {'PROCS':>5}"
    )
    out.write(header + "\n")
    for sample in snapshot.samples:
        static = statics.get(sample.index)
        full_name = (static.name if static else "?").removeprefix("NVIDIA ")
        name = "" if one_name else f" {full_name[:18]:<18}"
        numa = static.numa_node if static and static.numa_node is not None else "-"
        if sample.lost:
            out.write(f"{sample.index:>3}{name} {numa:>4} LOST: {sample.error or ''}\n")
            continue
        used = _num(sample.memory_used_bytes / GIB if sample.memory_used_bytes is not None
                    else None, ".1f")  # fmt: skip
        total = _num(sample.memory_total_bytes / GIB if sample.memory_total_bytes else None, ".1f")
        power = f"{_num(sample.power_w, '.0f')}/{_num(sample.power_limit_w, '.0f')}"
        pcie = f"{sample.pcie_gen or '?'}x{sample.pcie_width or '?'}"
        util = _num(sample.utilization_gpu_pct, ".0f")
        temp = _num(sample.temperature_c, ".0f")
        processes = len({p.pid for p in sample.processes})
        out.write(
            f"{sample.index:>3}{name} {numa:>4} {used + '/' + total:>11} {util + '%':>5} "
            f"{temp + 'C':>5} {power:>8} {pcie:>5} {processes:>5}\n"
        )
    used_bytes, total_bytes = total_memory_bytes(snapshot.samples)
    out.write(
        f"total memory {used_bytes / GIB:.1f}/{total_bytes / GIB:.1f} GiB, "
        f"{len(snapshot.processes())} GPU processes\n"
    )
