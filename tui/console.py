"""Opening the console from the command line (kept out of cli.py so `--version` stays fast)."""

from __future__ import annotations

import argparse

from tui.config import Profile
from tui.errors import ServedeckError
from tui.hosts.base import Host
from tui.hosts.local import LocalHost
from tui.profile_store import load_profile


def host_for(profile: Profile) -> Host:
    """The Host a profile names: this machine, an SSH route, or the simulator's box."""
    if profile.host.kind == "local" or profile.is_demo:
        return LocalHost()
    try:
        from tui.hosts.factory import host_for_profile
    except ImportError:
        raise ServedeckError(
            f"{profile.host.route}: SSH hosts are not available in this build"
        ) from None
    return host_for_profile(profile)


def open_console(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile, demo=args.demo, read_only=args.read_only)
    from tui.app import ServedeckApp

    app = ServedeckApp(profile, host_for(profile))
    return app.run() or 0
