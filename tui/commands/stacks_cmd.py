"""`servedeck stacks`: the engine's Python stacks (py-spy) and kernel stacks, per rank, saved.

Read-only: py-spy reads each process's memory with --nonblocking and never pauses or
signals the engine; the file under the data dir is what the stall incident names.
"""

from __future__ import annotations

import argparse
import asyncio

from tui.commands._target import deck_from_args
from tui.core.audit import append_audit
from tui.ops.engine_stacks import engine_stacks
from tui.serving.progress.incident import STACKS_EVENT


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "stacks",
        parents=[common],
        help="dump the engine's stacks per rank (py-spy, read-only) to the data dir",
        epilog="py-spy dump --nonblocking reads each process's memory: the engine is never "
        "paused or signalled. Kernel stacks are read where /proc allows (root).",
    )
    parser.add_argument(
        "--full", action="store_true", help="print the whole dump, not only where it is"
    )
    parser.set_defaults(func=run_stacks)


def run_stacks(args: argparse.Namespace) -> int:
    deck = deck_from_args(args)

    async def _run() -> tuple[str, str, str]:
        try:
            dump, path = await engine_stacks(deck)
        finally:
            await deck.close()
        summary = dump.summary()
        append_audit(
            STACKS_EVENT, deck.host.label, {"summary": summary, "file": str(path), "stalled": None}
        )
        return summary, str(path), path.read_text(encoding="utf-8")

    summary, path, text = asyncio.run(_run())
    print(text if args.full else f"{summary}\nsaved to {path}")
    return 0
