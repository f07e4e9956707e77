"""The GpuSource for the simulator: snapshots of a SimBox, marked simulated."""

from __future__ import annotations

import asyncio

from tui.gpu.model import GpuBoxSnapshot
from tui.sim.box import SimBox


class SimGpuSource:
    """GpuSource protocol over a SimBox; file reads run in a thread, off the event loop."""

    name = "simulated"

    def __init__(self, box: SimBox) -> None:
        self._box = box

    async def sample(self) -> GpuBoxSnapshot:
        return await asyncio.to_thread(self._box.snapshot)

    async def aclose(self) -> None:
        """The box belongs to whoever created it; nothing to release here."""
