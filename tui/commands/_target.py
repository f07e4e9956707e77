"""Turn `--profile` / `--demo` / `--read-only` into a Profile or an opened Deck, for every subcommand."""

from __future__ import annotations

import argparse

from tui.compose import open_deck
from tui.core.config import Profile
from tui.deck import Deck
from tui.hosts.profiles import load_profile


def profile_from_args(args: argparse.Namespace) -> Profile:
    return load_profile(
        getattr(args, "profile", None),
        demo=getattr(args, "demo", False),
        read_only=getattr(args, "read_only", False),
    )


def deck_from_args(args: argparse.Namespace, *, demo_serving: bool = True) -> Deck:
    """The deck for the command line; a demo box is loaded first so there is something to see."""
    return open_deck(
        profile_from_args(args), demo_autostart=demo_serving, demo_wait_ready=demo_serving
    )
