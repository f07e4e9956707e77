"""Which recording a profile writes to: one SQLite file per host in the data dir.

Every local profile is host `local`, so a local profile's file is keyed by the profile's
name (`local-<name>.sqlite`): two local profiles (two services on this machine) get two
recordings and two recorders. The one `local.sqlite` of earlier versions is moved to the
first local profile that opens its recording, while nobody records it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tui.core import paths
from tui.core.config import Profile
from tui.record.lock import RecordLock
from tui.record.schema import RecordingError

LEGACY_LOCAL = "local.sqlite"


def host_slug(host_label: str) -> str:
    """A file name for a host label: `ops@box:2222 via pve` -> `ops_box_2222_via_pve`."""
    slug = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in host_label).strip("_.")
    return slug or "host"


def recording_path(profile: Profile) -> Path:
    folder = paths.data_dir() / "recordings"
    if profile.host.kind != "local":
        return folder / f"{host_slug(profile.host_label)}.sqlite"
    path = folder / f"local-{host_slug(profile.name)}.sqlite"
    _take_over_legacy(folder / LEGACY_LOCAL, path)
    return path


def _take_over_legacy(legacy: Path, path: Path) -> None:
    """Move `local.sqlite` (and its -wal, -shm) to `path`, so its history stays this
    profile's; left alone while another process records it or once `path` exists."""
    if path.exists() or not legacy.exists():
        return
    lock = RecordLock(legacy, "servedeck (moving the recording to its profile's file)")
    try:
        lock.acquire()
    except RecordingError:
        return  # an older servedeck records it now; it stays readable with --db
    try:
        if path.exists():
            return
        for suffix in ("-wal", "-shm"):
            side = legacy.with_name(legacy.name + suffix)
            with contextlib.suppress(FileNotFoundError):
                os.replace(side, path.with_name(path.name + suffix))
        with contextlib.suppress(FileNotFoundError):
            os.replace(legacy, path)  # last: a new name with no main file is no recording
    except OSError:
        pass  # a read-only data dir: the writer says so when it opens `path`
    finally:
        lock.release()
