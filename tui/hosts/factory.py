"""The Host for a profile: this machine or SSH (the simulator's box opens with its Deck)."""

from __future__ import annotations

import shlex

from tui.core import paths
from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.hosts.base import Host
from tui.hosts.local import LocalHost
from tui.hosts.profiles import with_route


def profile_ref(profile: Profile) -> str:
    """How to name this profile on the command line (`--profile ...`)."""
    if profile.path is None or profile.path.parent == paths.user_profiles_dir():
        return profile.name
    return str(profile.path)


def trust_args(profile: Profile) -> str:
    """What names this profile's host to `servedeck hosts trust`, quoted for a shell.

    A profile read from a file is `--profile REF`; an ssh config alias opened with no
    profile (`--ssh ALIAS`) has no file to name, so it is `--ssh ALIAS`.
    """
    if profile.path is None and profile.host.ssh_alias:
        return f"--ssh {shlex.quote(profile.host.ssh_alias)}"
    return f"--profile {shlex.quote(profile_ref(profile))}"


def host_for_profile(profile: Profile) -> Host:
    """A Host that is not connected yet: SSH connects on first use."""
    kind = profile.host.kind
    if kind == "local":
        return LocalHost()
    if kind == "ssh":
        from tui.hosts.ssh import SSHHost  # asyncssh costs ~90 ms: only SSH profiles load it

        return SSHHost(with_route(profile).host, trust_args=trust_args(profile))
    raise ServedeckError(f"profile {profile.name}: unknown host kind {kind!r}")
