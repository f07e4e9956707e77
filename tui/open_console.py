"""Opening the console from the command line (kept out of cli.py so `--version` stays fast)."""

from __future__ import annotations

import argparse

from tui.compose import CONSOLE_DEMO_LOAD_S, open_deck
from tui.core import paths
from tui.core.config import Profile
from tui.hosts.profiles import load_profile


def run_console(
    profile: Profile,
    *,
    demo_autostart: bool = False,
    demo_load_s: float | None = None,
    demo_server_args: tuple[str, ...] = (),
) -> int:
    """Open the console on a profile; the demo gets its simulated box here."""
    from tui.app import ServedeckApp

    load_s = CONSOLE_DEMO_LOAD_S if demo_load_s is None else demo_load_s
    deck = open_deck(
        profile,
        demo_load_s=load_s,
        demo_autostart=demo_autostart,
        demo_server_args=demo_server_args,
    )
    app = ServedeckApp(deck.profile, deck)
    with paths.demo_records(profile.is_demo):  # the demo's records stay out of the real ones
        return app.run() or 0


def open_console(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile, demo=args.demo, read_only=args.read_only)
    return run_console(profile)
