"""`servedeck demo`: the console on the built-in simulator, with the model load already started."""

from __future__ import annotations

import argparse

from tui.config import demo_profile


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "demo",
        parents=[common],
        help="open the console on a simulated 8-GPU box (no GPU needed)",
        description="A simulated 8x RTX PRO 6000 box serving Kimi-K2.5 INT4 under a systemd-like "
        "unit: watch it load, benchmark it, stop it and clean up the workers it leaves behind.",
    )
    parser.add_argument(
        "--stopped", action="store_true", help="start with the service stopped (press S to start)"
    )
    parser.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from tui.console import run_console

    profile = demo_profile(read_only=getattr(args, "read_only", False))
    return run_console(profile, demo_autostart=not args.stopped)
