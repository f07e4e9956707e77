"""The `servedeck` command line: the console by default, subcommands for each source.

Each subcommand lives in its own module under tui/commands/ and registers itself
through `add_parser(subparsers, common)`; adding one is a line in COMMAND_MODULES.
Only the module of the command being run is imported (all of them for --help), so
`servedeck --version` and the console do not pay for every subcommand's imports.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tui import __version__
from tui.core import paths
from tui.core.errors import ServedeckError

COMMAND_MODULES: dict[str, str] = {
    "profiles": "tui.commands.profiles_cmd",
    "doctor": "tui.commands.doctor_cmd",
    "health": "tui.commands.health_cmd",
    "probe": "tui.commands.probe_cmd",
    "plan": "tui.commands.plan_cmd",
    "sim": "tui.commands.sim_cmd",
    "demo": "tui.commands.demo_cmd",
    "gpus": "tui.commands.gpus_cmd",
    "logs": "tui.commands.logs",
    "status": "tui.commands.status",
    "stacks": "tui.commands.stacks_cmd",
    "hosts": "tui.commands.hosts_cmd",
    "procs": "tui.commands.procs_cmd",
    "kill": "tui.commands.kill_cmd",
    "bench": "tui.commands.bench_cmd",
    "summary": "tui.commands.summary_cmd",
    "serve": "tui.commands.serve_cmd",
    "record": "tui.commands.record_cmd",
    "timeline": "tui.commands.timeline_cmd",
    "replay": "tui.commands.replay_cmd",
    "service": "tui.commands.service_cmd",
    "exporter": "tui.commands.exporter_cmd",
    "fleet": "tui.commands.fleet_cmd",
    "mcp": "tui.commands.mcp_cmd",
    "tune": "tui.commands.tune_cmd",
}


# Commands for which `--demo` means nothing: they are the simulator, or never open a box.
WITHOUT_DEMO = frozenset({"demo", "sim", "profiles", "hosts", "replay"})
# Commands that can change the host or load its server: the only ones `--read-only` limits.
WITH_READ_ONLY = frozenset(
    {"demo", "service", "kill", "bench", "probe", "health", "doctor", "mcp", "tune"}
)


def common_options(
    suppress_defaults: bool = False, *, demo: bool = True, read_only: bool = True
) -> argparse.ArgumentParser:
    """Options every command accepts: which profile, the simulator, read-only.

    Subcommands get them with suppressed defaults, so `servedeck -p X gpus` keeps X, and
    only those that mean something for them (`demo --demo` and `plan --read-only` are not
    offered); the top-level parser's defaults still give every command both attributes.
    """
    common = argparse.ArgumentParser(add_help=False)
    defaults: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress_defaults else {}
    common.add_argument(
        "--profile",
        "-p",
        metavar="NAME|PATH",
        help="profile name or path to a .toml file",
        **defaults,
    )
    if demo:
        common.add_argument(
            "--demo",
            action="store_true",
            help="use the built-in simulator instead of a real host",
            **defaults,
        )
    if read_only:
        common.add_argument(
            "--read-only",
            action="store_true",
            help="disable every action that changes the host",
            **defaults,
        )
    return common


def command_options(name: str) -> argparse.ArgumentParser:
    """The common options one subcommand takes (suppressed defaults)."""
    return common_options(
        suppress_defaults=True, demo=name not in WITHOUT_DEMO, read_only=name in WITH_READ_ONLY
    )


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand argv names (stage one: names only, so nothing heavy is imported)."""
    probe = argparse.ArgumentParser(prog="servedeck", add_help=False, parents=[common_options()])
    probe.add_argument("--version", action="store_true")
    probe.add_argument("-g", "--group")
    probe.add_argument("--ssh")
    commands = probe.add_subparsers(dest="command")
    for name in COMMAND_MODULES:
        commands.add_parser(name, add_help=False)
    known, _ = probe.parse_known_args(argv)
    return known.command


def _wanted_modules(argv: Sequence[str] | None) -> list[str]:
    """The command modules this command line needs: its own, or all of them for help."""
    if argv is None or any(word in ("-h", "--help") for word in argv):
        return list(COMMAND_MODULES.values())
    command = _chosen_command(argv)
    return [COMMAND_MODULES[command]] if command else []


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with argv, only the subcommands that argv can name are registered."""
    parser = argparse.ArgumentParser(
        prog="servedeck",
        description="Terminal console for LLM serving on multi-GPU servers.",
        parents=[common_options()],
    )
    parser.add_argument("--version", action="version", version=f"servedeck {__version__}")
    parser.add_argument(
        "-g", "--group", metavar="GROUP", help="open the Fleet pane on a host group"
    )
    parser.add_argument(
        "--ssh",
        metavar="ALIAS[,ALIAS...]",
        help="open a ~/.ssh/config alias with no profile (read-only; several: the fleet)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = {module: name for name, module in COMMAND_MODULES.items()}
    for module_name in _wanted_modules(argv):
        common = command_options(names[module_name])
        module = importlib.import_module(module_name)
        module.add_parser(subparsers, common)
        _describe(subparsers.choices[names[module_name]], module.__doc__ or "")
    parser.set_defaults(func=_open_console)
    return parser


def _describe(parser: argparse.ArgumentParser, doc: str) -> None:
    """A command that states no description gets its module's docstring, as written.

    `servedeck CMD --help` then always says what CMD does, not only its usage line.
    """
    if not (parser.description or "").strip() and doc.strip():
        parser.description = doc.strip()
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for action in parser._actions:  # `profiles list`, `hosts trust`: the line the list shows
        if isinstance(action, argparse._SubParsersAction):
            said = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, child in action.choices.items():
                text = said.get(name, "")
                _describe(child, text[:1].upper() + text[1:])


def _open_console(args: argparse.Namespace) -> int:
    if getattr(args, "group", None):  # `servedeck -g GROUP`: the fleet
        from tui.commands.fleet_cmd import open_group

        return open_group(args.group, read_only=args.read_only)
    if getattr(args, "ssh", None):  # `servedeck --ssh kimi`: an alias, no profile
        from tui.commands.fleet_cmd import open_ssh

        return open_ssh(args.ssh)
    from tui.open_console import open_console

    return open_console(args)


def run_async(coroutine_factory: Callable[[], object]) -> object:
    """Run a subcommand's coroutine; Ctrl-C ends it quietly."""
    return asyncio.run(coroutine_factory())  # type: ignore[arg-type]


def _runs_the_demo(args: argparse.Namespace) -> bool:
    """`demo`, `--demo` or a demo-kind profile: its records go to the demo's own folders."""
    if args.command == "demo" or getattr(args, "demo", False):
        return True
    named = getattr(args, "profile", None)
    names = named if isinstance(named, list) else [named] if named else []  # fleet: -p ...
    if not names:
        return False
    from tui.hosts.profiles import load_profile

    try:
        return all(load_profile(name).is_demo for name in names)
    except ServedeckError:
        return False  # the command itself reports the bad profile


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
    try:
        with paths.demo_records(_runs_the_demo(args)):
            result = args.func(args)
    except ServedeckError as error:
        print(f"servedeck: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("servedeck: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`servedeck gpus --json | head`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return int(result or 0)
