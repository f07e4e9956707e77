"""Pick the GPU source for a host: NVML locally, nvidia-smi over the Host otherwise.

The simulator's source comes from its Deck (tui.sim.deck.SimDeck), never from here.
"""

from __future__ import annotations

import time

from tui.core.config import Profile
from tui.core.errors import CommandNotFound
from tui.gpu.model import GpuBoxSnapshot, GpuSource
from tui.gpu.nvml import NvmlGpuSource
from tui.gpu.nvml_calls import NvmlUnavailable
from tui.gpu.smi import NO_DRIVER, SmiGpuSource
from tui.hosts.base import Host


class NoGpuSource:
    """A host with neither NVML nor nvidia-smi: every sample says so, in one line."""

    name = "none"

    def __init__(self, error: str = NO_DRIVER) -> None:
        self.error = error

    async def sample(self) -> GpuBoxSnapshot:
        return GpuBoxSnapshot(
            source=self.name, taken_at_s=time.time(), available=False, error=self.error
        )

    async def aclose(self) -> None:
        return None


async def _has_nvidia_smi(host: Host) -> bool:
    """Whether the host answered that it has nvidia-smi.

    Only the host's own answer says "no": a host not reached raises (HostUnreachable),
    so the console never states a driver fact about a machine it could not ask.
    """
    try:
        result = await host.run(["nvidia-smi", "-L"], timeout_s=15.0)
    except CommandNotFound:
        return False
    # 127: the shell found no such command; any other failure is reported by the source
    return result.exit_status != 127


async def gpu_source_for(
    host: Host,
    profile: Profile | None = None,
    *,
    interval_s: float | None = None,
) -> GpuSource:
    """The best GPU source for host."""
    refresh_s = interval_s or (profile.gpu.refresh_s if profile is not None else 1.0)
    if host.is_local:
        try:
            return await NvmlGpuSource.open()
        except NvmlUnavailable as error:
            nvml_error = str(error)
        if await _has_nvidia_smi(host):
            return SmiGpuSource(host, interval_s=refresh_s)
        return NoGpuSource(nvml_error)
    if await _has_nvidia_smi(host):
        return SmiGpuSource(host, interval_s=refresh_s)
    return NoGpuSource(f"{host.label}: {NO_DRIVER}")
