"""Busier levels' values pooled into each level's p99 proofs as the search adds levels.

Latencies rise with load (tui.bench.capacity.judge says why that makes the pooled upper
bound valid): each time a level is measured, every quieter closed-loop level is judged
again with the TTFT and ITL values of the levels above it, so the bracket's requests
prove a p99 together. Only levels that ran whole count: an over-saturated level stopped
early kept its faster requests, a client-bound one measured the client.
"""

from __future__ import annotations

from dataclasses import replace

from tui.bench.capacity.judge import Busier, open_objectives
from tui.bench.capacity.measure import ClosedLoop, level_seed
from tui.bench.capacity.search import CapacityLevel
from tui.bench.capacity.spec import CapacitySpec

OVER_SATURATED = frozenset({"errors", "preemptions", "queue"})


def pooled_levels(
    levels: list[CapacityLevel],
    loops: dict[int, ClosedLoop],
    spec: CapacitySpec,
    scale: float,
) -> list[CapacityLevel]:
    """Each closed-loop level judged again with the values of every busier level that ran
    whole (not over-saturated, cancelled or client-bound): a p99 near the limit is then
    proved by the bracket's requests together, not by 368 more at one level."""
    sources = sorted(
        (lv.concurrency, loops[lv.concurrency])
        for lv in levels
        if lv.concurrency in loops
        and not lv.partial
        and not lv.client_bound
        and not OVER_SATURATED.intersection(lv.failures)
    )
    found = []
    for level in levels:
        loop_run = loops.get(level.concurrency)
        busier = [run for c, run in sources if c > level.concurrency]
        if loop_run is None or level.partial or level.client_bound or not busier:
            found.append(level)
            continue
        good = [o for run in busier for o in run.measured if o.success]
        pool = Busier(
            tuple(o.ttft_s * scale * 1000 for o in good),
            tuple(gap * scale * 1000 for o in good for gap in o.itl_s),
        )
        undecided, needs = open_objectives(
            [o for o in loop_run.measured if o.success],
            spec.slo,
            scale,
            level_seed(spec, level.concurrency, level.extensions),
            pool,
        )
        found.append(replace(level, undecided=undecided, undecided_needs=needs))
    return found
