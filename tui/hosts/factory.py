"""The Host for a profile: this machine or SSH (the simulator's box opens with its Deck)."""

from __future__ import annotations

from tui.core import paths
from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.hosts.base import Host
from tui.hosts.local import LocalHost


def profile_ref(profile: Profile) -> str:
    """How to name this profile on the command line (`--profile ...`)."""
    if profile.path is None or profile.path.parent == paths.user_profiles_dir():
        return profile.name
    return str(profile.path)


def host_for_profile(profile: Profile) -> Host:
    """A Host that is not connected yet: SSH connects on first use."""
    kind = profile.host.kind
    if kind == "local":
        return LocalHost()
    if kind == "ssh":
        from tui.hosts.ssh import SSHHost  # asyncssh costs ~90 ms: only SSH profiles load it

        return SSHHost(profile.host, profile_ref=profile_ref(profile))
    raise ServedeckError(f"profile {profile.name}: unknown host kind {kind!r}")
