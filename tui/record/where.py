"""Which recording a profile's host writes to: one SQLite file per host in the data dir."""

from __future__ import annotations

from pathlib import Path

from tui.core import paths
from tui.core.config import Profile


def host_slug(host_label: str) -> str:
    """A file name for a host label: `ops@box:2222 via pve` -> `ops_box_2222_via_pve`."""
    slug = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in host_label).strip("_.")
    return slug or "host"


def recording_path(profile: Profile) -> Path:
    return paths.data_dir() / "recordings" / f"{host_slug(profile.host_label)}.sqlite"
