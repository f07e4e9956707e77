"""`servedeck doctor --demo`: the same verdicts, about the simulator instead of this machine.

The demo never touches this machine's driver, systemd or port 8000, so checking
those would answer a question nobody asked (and fail on every laptop).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tui.core.errors import ServedeckError
from tui.hostfacts.doctor import FAIL, OK, WARN, DoctorCheck
from tui.serving.readiness import ReadinessProbe

if TYPE_CHECKING:
    from tui.sim.deck import SimDeck  # the Deck that calls this

GIB = 1024**3


async def run_demo_doctor(deck: SimDeck) -> list[DoctorCheck]:
    """Host, GPUs, unit and port of the deck's simulated box."""
    box = deck.box
    checks = [DoctorCheck("host", OK, f"simulator (state in {box.state_dir})")]
    snapshot = await asyncio.to_thread(box.snapshot)
    if snapshot.available and snapshot.statics:
        total = sum(static.memory_total_bytes or 0 for static in snapshot.statics)
        checks.append(
            DoctorCheck(
                "gpus",
                OK,
                f"{snapshot.gpu_count} simulated x {snapshot.statics[0].name} "
                f"({total / GIB:,.1f} GiB), driver {snapshot.driver_version}",
            )
        )
    else:
        checks.append(DoctorCheck("gpus", FAIL, snapshot.error or "the simulated GPUs are missing"))
    controller = deck.service()
    try:
        unit = await controller.state() if controller is not None else None
    except ServedeckError as error:
        checks.append(DoctorCheck("unit", FAIL, str(error)))
        unit = None
    if unit is not None:
        verdict = OK if unit.active_state == "active" else WARN
        checks.append(
            DoctorCheck("unit", verdict, f"{unit.unit}: {unit.active_state} ({unit.sub_state})")
        )
    ready = await ReadinessProbe(deck.base_url).check(None)
    where = deck.base_url.removeprefix("http://")
    if ready.health_ok:
        models = ", ".join(ready.models) or "no model listed"
        checks.append(DoctorCheck("service port", OK, f"{where}: /health answers 200 ({models})"))
    else:
        checks.append(DoctorCheck("service port", WARN, f"{where}: {ready.error or 'no answer'}"))
    return checks
