"""What a capacity search process is asked: the benchmark, the SLO, its bounds and pace;
it travels as JSON on the process's stdin.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tui.bench.capacity.search import CapacitySlo
from tui.bench.workload import BenchSpec


@dataclass(frozen=True, slots=True)
class CapacitySpec:
    """What the search process needs; travels as JSON on its stdin."""

    bench: BenchSpec
    slo: CapacitySlo = field(default_factory=CapacitySlo)
    start: int = 1
    max_concurrency: int = 1024
    max_levels: int = 8
    rounds: int = 3  # measured requests per user after the warm-up round
    min_requests: int = 16
    poll_s: float = 0.25
    by: str = "concurrency"  # or "rate": open-loop Poisson levels
    rate_step: float = 0.25  # req/s per search step when by rate
    rate_level_s: float = 30.0  # server seconds of arrivals per rate level
    # an undecided level is run again for more requests, up to this many measured
    # (a p99 needs 368 to be shown met: tui.bench.uncertainty.requests_for_upper_bound)
    max_level_requests: int = 400

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bench": self.bench.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CapacitySpec:
        values = dict(data)
        values["bench"] = BenchSpec.from_dict(values["bench"])
        values["slo"] = CapacitySlo(**(values.get("slo") or {}))
        return cls(**values)
