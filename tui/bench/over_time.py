"""A level over time: per-second output tok/s, requests running and TTFT, from its requests.

A level's averages hide a warm-up or a stall in the middle of a run; slices of the run
show them. Built after the level from what each request already holds (send time, first
token, the gaps between chunks, end), so measuring costs nothing while it runs: one pass
over the chunks (tokens spread evenly over a request's chunks when the server counted
more than one token a chunk).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the model holds TimeSlice: no import back at run time
    from tui.bench.model import RequestOutcome

SLICE_S = 1.0
MAX_SLICES = 600  # a longer level widens its slices instead


@dataclass(frozen=True, slots=True)
class TimeSlice:
    start_s: float  # from the level's first send
    output_tok_s: float
    running: float  # requests in flight, averaged over the slice
    completed: int  # requests that ended (succeeded) in the slice
    ttft_p50_ms: float | None  # of requests whose first token came in it; None: none did


def time_slices(outcomes: Sequence[RequestOutcome]) -> tuple[TimeSlice, ...]:
    """The level cut into slices of SLICE_S (wider past MAX_SLICES); () when nothing ran."""
    timed = [o for o in outcomes if o.start_s > 0 and o.end_s >= o.start_s]
    if not timed:
        return ()
    origin = min(o.start_s for o in timed)
    span = max(o.end_s for o in timed) - origin
    width = max(SLICE_S, span / MAX_SLICES)
    count = max(1, math.ceil(span / width))
    tokens = [0.0] * count
    busy = [0.0] * count
    done = [0] * count
    ttfts: list[list[float]] = [[] for _ in range(count)]
    last = count - 1
    for o in timed:
        _spread_busy(busy, o.start_s - origin, o.end_s - origin, width)
        if not o.success:
            continue
        done[min(last, int((o.end_s - origin) / width))] += 1
        if not o.chunks:
            continue
        at = o.start_s + o.ttft_s - origin
        ttfts[min(last, int(at / width))].append(o.ttft_s)
        per_chunk = (o.output_tokens if o.usage_seen else o.chunks) / o.chunks
        tokens[min(last, int(at / width))] += per_chunk
        for gap in o.itl_s:
            at += gap
            tokens[min(last, int(at / width))] += per_chunk
    slices = []
    for index in range(count):
        # the last slice may be short: rates over the time it covers
        covered = min(width, span - index * width) if span > 0 else width
        covered = covered if covered > 0 else width
        firsts = sorted(ttfts[index])
        slices.append(
            TimeSlice(
                start_s=index * width,
                output_tok_s=tokens[index] / covered,
                running=busy[index] / covered,
                completed=done[index],
                ttft_p50_ms=firsts[len(firsts) // 2] * 1000 if firsts else None,
            )
        )
    return tuple(slices)


def _spread_busy(busy: list[float], start: float, end: float, width: float) -> None:
    """Add a request's time in flight to each slice it overlaps."""
    first, last = int(start / width), min(len(busy) - 1, int(end / width))
    for index in range(first, last + 1):
        low, high = max(start, index * width), min(end, (index + 1) * width)
        if high > low:
            busy[index] += high - low


def slices_from_dicts(data: Sequence[dict[str, Any]] | None) -> tuple[TimeSlice, ...]:
    return tuple(TimeSlice(**item) for item in data or ())
