"""Faults a test switches on while the simulated server runs (POST /_sim/fault): what
they are, and a request's body applied to them and to the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tui.sim.engine import SimEngine
from tui.sim.hang import HANGS, SLOW_FACTOR


@dataclass(slots=True)
class RuntimeFaults:
    """Faults a test can switch on while the server runs (POST /_sim/fault)."""

    http_5xx_rate: float = 0.0
    cut_stream_after_tokens: int | None = None
    stall_s: float = 0.0
    hang: str = ""  # tui.sim.hang.HANGS
    stop_rank: int | None = None


def apply_fault(faults: RuntimeFaults, body: dict[str, Any], engine: SimEngine) -> str | None:
    """Apply each fault the body names, in order; the problem with an unknown hang (the
    faults before it are applied), else None."""
    if "http_5xx_rate" in body:
        faults.http_5xx_rate = float(body["http_5xx_rate"])
    if "cut_stream_after_tokens" in body:
        value = body["cut_stream_after_tokens"]
        faults.cut_stream_after_tokens = None if value is None else int(value)
    if "hang" in body:
        if body["hang"] not in HANGS:
            return f"hang must be one of {HANGS}"
        faults.hang = str(body["hang"])
        engine.slow_factor = SLOW_FACTOR if faults.hang == "slow" else 1.0
    if "stop_rank" in body:
        value = body["stop_rank"]
        faults.stop_rank = None if value is None else int(value)
    if "stall_s" in body:
        faults.stall_s = float(body["stall_s"])
        engine.stall(faults.stall_s)
    return None
