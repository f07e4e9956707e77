"""Resolve `--profile` / `--demo` into a Profile and a Host for the log and status commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from tui import paths
from tui.config import Profile, load_profile_file
from tui.errors import ServedeckError, UsageError
from tui.hosts.base import Host
from tui.hosts.local import LocalHost


def resolve_profile(args: argparse.Namespace) -> Profile:
    name = getattr(args, "profile", None)
    if not name:
        return Profile(name="local")
    candidate = Path(name).expanduser()
    if candidate.suffix == ".toml" or candidate.exists():
        return load_profile_file(candidate)
    for folder in (paths.user_profiles_dir(), Path.cwd() / "profiles"):
        path = folder / f"{name}.toml"
        if path.exists():
            return load_profile_file(path)
    raise UsageError(f"profile {name!r} not found (give a name in profiles/ or a .toml path)")


def open_host(profile: Profile) -> Host:
    if profile.host.kind == "local":
        return LocalHost()
    raise ServedeckError(f"{profile.host.label}: {profile.host.kind} hosts are not available yet")


def require_demo_support() -> None:
    """The demo needs the simulator; say so in one line while it is not there."""
    try:
        import tui.sim  # noqa: F401
    except ImportError:
        raise ServedeckError(
            "--demo is not available yet (the simulator is not built in)"
        ) from None
    raise ServedeckError("--demo is not wired to this command yet")
