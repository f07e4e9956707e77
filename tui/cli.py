"""The `servedeck` command line: the console by default, subcommands for each source.

Each subcommand lives in its own module under tui/commands/ and registers itself
through `add_parser(subparsers, common)`; adding one is a line in COMMAND_MODULES.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Callable, Sequence

from tui import __version__
from tui.errors import ServedeckError

COMMAND_MODULES: tuple[str, ...] = (
    "tui.commands.profiles_cmd",
    "tui.commands.doctor_cmd",
    "tui.commands.plan_cmd",
    "tui.commands.sim_cmd",
    "tui.commands.demo_cmd",
    "tui.commands.gpus_cmd",
    "tui.commands.logs",
    "tui.commands.status",
    "tui.commands.hosts_cmd",
    "tui.commands.procs_cmd",
    "tui.commands.kill_cmd",
    "tui.commands.bench_cmd",
    "tui.commands.summary_cmd",
)


def common_options(suppress_defaults: bool = False) -> argparse.ArgumentParser:
    """Options every command accepts: which profile, the simulator, read-only.

    Subcommands get them with suppressed defaults, so `servedeck -p X gpus` keeps X.
    """
    common = argparse.ArgumentParser(add_help=False)
    defaults = {"default": argparse.SUPPRESS} if suppress_defaults else {}
    common.add_argument(
        "--profile",
        "-p",
        metavar="NAME|PATH",
        help="profile name or path to a .toml file",
        **defaults,
    )
    common.add_argument(
        "--demo",
        action="store_true",
        help="use the built-in simulator instead of a real host",
        **defaults,
    )
    common.add_argument(
        "--read-only",
        action="store_true",
        help="disable every action that changes the host",
        **defaults,
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="servedeck",
        description="Terminal console for LLM serving on multi-GPU servers.",
        parents=[common_options()],
    )
    common = common_options(suppress_defaults=True)
    parser.add_argument("--version", action="version", version=f"servedeck {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_parser(subparsers, common)
    parser.set_defaults(func=_open_console)
    return parser


def _open_console(args: argparse.Namespace) -> int:
    from tui.console import open_console

    return open_console(args)


def run_async(coroutine_factory: Callable[[], object]) -> object:
    """Run a subcommand's coroutine; Ctrl-C ends it quietly."""
    return asyncio.run(coroutine_factory())  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except ServedeckError as error:
        print(f"servedeck: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("servedeck: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)
