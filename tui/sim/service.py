"""The simulator's unit behind the same ServiceController the console uses for systemd.

Actions go through `audited_action`, so confirmation, read-only refusal and the
audit log behave exactly as they do for a real unit.
"""

from __future__ import annotations

import asyncio
import time

from tui.serving.unit.service import (
    ActionOutcome,
    ServiceAction,
    UnitState,
    audited_action,
    describe_action,
    parse_systemctl_show,
)
from tui.sim.box import SimBox

SIM_HOST_LABEL = "simulator"


class SimService:
    """ServiceController over a SimBox's unit; `stop` may leave orphans (the box's fault setting)."""

    # The unit's state is a read of the box's own file: the console may read it every second.
    state_costs_a_command = False

    def __init__(
        self, box: SimBox, *, read_only: bool = False, host_label: str = SIM_HOST_LABEL
    ) -> None:
        self.box = box
        self.read_only = read_only
        self.host_label = host_label
        self.unit = box.unit.name

    def describe(self, verb: str) -> ServiceAction:
        return describe_action(self.host_label, self.unit, verb)

    async def state(self) -> UnitState:
        return parse_systemctl_show(self.unit, self.box.unit.show_text())

    async def _act(self, verb: str, confirmed: bool, orphans: int | None = None) -> ActionOutcome:
        async def run(action: ServiceAction) -> tuple[int, str, float]:
            started = time.monotonic()
            if verb == "stop":
                await asyncio.to_thread(self.box.stop, orphans)
                await asyncio.to_thread(self.box.unit.wait_for_state, ("inactive", "failed"), 30.0)
            else:
                await asyncio.to_thread(getattr(self.box, verb))
            return 0, f"{verb} {self.unit}: {self.box.unit.state}", time.monotonic() - started

        return await audited_action(
            self.describe(verb), run, confirmed=confirmed, read_only=self.read_only
        )

    async def start(self, *, confirmed: bool) -> ActionOutcome:
        return await self._act("start", confirmed)

    async def stop(self, *, confirmed: bool, orphans: int | None = None) -> ActionOutcome:
        return await self._act("stop", confirmed, orphans)

    async def restart(self, *, confirmed: bool) -> ActionOutcome:
        return await self._act("restart", confirmed)
