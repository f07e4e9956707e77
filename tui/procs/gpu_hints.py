"""Where the process killer gets its GPU pid hints: whatever GPU source the profile has.

The GPU sources live in tui.gpu; this module only asks them for one snapshot.
Without a source (no driver, or none built in), the listing falls back to the
processes holding /dev/nvidia* open, with GPU memory unknown.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable

from tui.config import Profile
from tui.gpu.model import GpuBoxSnapshot
from tui.hosts.base import Host

# A module exposing `gpu_source_for(profile, host) -> GpuSource`.
GPU_FACTORY_MODULE = "tui.gpu.factory"


async def gpu_snapshot(profile: Profile, host: Host) -> GpuBoxSnapshot | None:
    """One snapshot from the profile's GPU source, or None when there is none."""
    try:
        factory = importlib.import_module(GPU_FACTORY_MODULE)
    except ImportError:
        return None
    source = factory.gpu_source_for(profile, host)
    try:
        snapshot: GpuBoxSnapshot = await source.sample()
    finally:
        await source.aclose()
    return snapshot if snapshot.available else None


def rereader(profile: Profile, host: Host) -> Callable[[], Awaitable[GpuBoxSnapshot | None]]:
    """The re-read callback a kill uses to see what memory was released."""

    async def reread() -> GpuBoxSnapshot | None:
        return await gpu_snapshot(profile, host)

    return reread
