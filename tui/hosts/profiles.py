"""Profiles with their SSH route: the core's reading plus the `ssh_alias` lookup.

The core parses a profile without reading ~/.ssh/config (it imports nothing above it);
every caller that connects or shows a route loads profiles through here, so an alias's
HostName, User, ProxyJump ... are filled in as `ssh ALIAS` would use them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tui.core import config, profile_store
from tui.core.config import Profile
from tui.hosts.ssh_config import resolve_alias


def with_route(profile: Profile) -> Profile:
    """`profile` with its `ssh_alias` resolved (once: a resolved route states its origins)."""
    host = profile.host
    if not host.ssh_alias or host.origins:
        return profile
    return replace(profile, host=resolve_alias(host))


def load_profile_file(path: Path) -> Profile:
    """A valid Profile read from `path`, its alias resolved; ProfileError as the core's."""
    return with_route(config.load_profile_file(path))


def load_profile(name_or_path: str | None, demo: bool = False, read_only: bool = False) -> Profile:
    """The profile the command line asked for (see `profile_store.load_profile`), routed."""
    return with_route(profile_store.load_profile(name_or_path, demo=demo, read_only=read_only))
