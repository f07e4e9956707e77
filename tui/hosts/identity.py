"""SSH identity files named by a profile, checked before a connection is tried.

asyncssh reports a missing key file as a bare "No such file or directory"; the
operator needs to know which file, written the way the profile writes it.
"""

from __future__ import annotations

from pathlib import Path

from tui.core.config import HostConfig


def identity_files(config: HostConfig) -> list[str]:
    """The identity files of the route (jump hosts, then the target), each once, as written."""
    named = [hop.identity_file or config.identity_file for hop in config.jump]
    named.append(config.identity_file)
    return list(dict.fromkeys(name for name in named if name))


def missing_identity_files(config: HostConfig) -> list[str]:
    """The identity files of the route that do not exist on this machine."""
    if config.kind != "ssh":
        return []
    return [name for name in identity_files(config) if not Path(name).expanduser().is_file()]


def missing_identity_message(name: str) -> str:
    return f"identity file {name} not found"
