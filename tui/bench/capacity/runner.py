"""The capacity search process: `python -m tui.bench.capacity.runner` reads a spec on stdin.

Like tui.bench.runner it runs apart from the console (UI rendering never
inflates a latency) and writes JSON-line events on stdout:
  start        {model, engine_version, time_scale}
  level_start  {concurrency}
  level        {level: CapacityLevel as a dict}
  result       {result: the `bench --capacity --json` body}  (also after a cancel)
  error        {message}
Each level is a closed loop of N users sending `1 + rounds` requests each; the
first round is warm-up and excluded (chat and trace users: see
tui.bench.capacity.workloads). /metrics is polled while a level runs;
errors, preemptions or a waiting queue that keeps growing stop the level at
once (over-saturation). On a simulator with a fast clock (GET /_sim/clock),
every time measured is multiplied by its time scale, so results are in the
server's simulated seconds; the simulator's truth is fetched after the search.
SIGINT/SIGTERM cancel: the level in flight is dropped, finished levels are kept.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, replace
from typing import Any

import httpx

from tui.bench.capacity.measure import (
    ClosedLoop,
    measure_level,
    measure_rate_level,
    read_time_scale,
    read_truth,
)
from tui.bench.capacity.pooled import pooled_levels
from tui.bench.capacity.result import capacity_json, level_dict
from tui.bench.capacity.search import CapacityLevel, CapacitySearch
from tui.bench.capacity.spec import CapacitySpec
from tui.bench.capacity.workloads import CLOSED_LOOP_WORKLOADS, check_workload
from tui.bench.client import make_client
from tui.bench.process_io import api_key_for, describe, discover, emit, install_cancel
from tui.bench.workload import words_for_tokens


async def search(spec: CapacitySpec, cancel: asyncio.Event) -> dict[str, Any]:
    """Discovery, then levels until the search knows the answer; the `--json` body."""
    bench = spec.bench
    api_key = api_key_for(bench)
    control = make_client(
        max_connections=4, read_timeout_s=30.0, connect_timeout_s=bench.connect_timeout_s,
        transport="httpx", api_key=api_key,
    )  # fmt: skip
    by_rate = spec.by == "rate"
    searcher = CapacitySearch(
        spec.slo,
        start=max(1, round(1.0 / spec.rate_step)) if by_rate else spec.start,
        max_concurrency=10_000 if by_rate else spec.max_concurrency,
        max_levels=spec.max_levels,
        # a rate level is not run again: an undecided one is said so
        max_requests=0 if by_rate else spec.max_level_requests,
    )
    loops: dict[int, ClosedLoop] = {}
    started = time.time()
    check_workload(bench, spec.by)
    async with control:
        model, version = await discover(control, bench)
        bench = replace(bench, model=model)
        spec = replace(spec, bench=bench)
        scale = await read_time_scale(control, bench.base_url)
        words, prompt_method = await words_for_tokens(control, bench)
        emit("start", model=model, engine_version=version, time_scale=scale)
        async with make_client(
            max_connections=spec.max_concurrency, read_timeout_s=bench.read_timeout_s,
            connect_timeout_s=bench.connect_timeout_s, transport=bench.transport,
            api_key=api_key,
        ) as client:  # fmt: skip
            while not cancel.is_set():
                concurrency = searcher.next_concurrency()
                extend = searcher.to_extend() if concurrency is None else None
                if extend is not None and extend.concurrency in loops:
                    concurrency = extend.concurrency
                elif concurrency is None:
                    break
                if by_rate:
                    emit(
                        "level_start",
                        concurrency=concurrency,
                        request_rate=concurrency * spec.rate_step,
                    )
                    level = await measure_rate_level(
                        client, control, spec, words, concurrency, scale, cancel
                    )
                else:
                    earlier = (extend, loops[concurrency]) if extend else None
                    emit("level_start", concurrency=concurrency, extending=bool(earlier))
                    level, loops[concurrency] = await measure_level(
                        client, control, spec, words, concurrency, scale, cancel, earlier
                    )
                if level.partial and cancel.is_set():
                    break  # cancelled mid-level: keep only the finished levels
                searcher.record(level)
                if not by_rate:
                    searcher.rejudged(pooled_levels(searcher.levels, loops, spec, scale))
                    level = next(lv for lv in searcher.levels if lv.concurrency == concurrency)
                emit("level", level=_level_dict(level))
        # The simulator's truth is for closed-loop users of fixed-length prompts: a rate
        # search, chat (growing histories) and trace (the trace's lengths) have none.
        no_truth = by_rate or bench.workload in CLOSED_LOOP_WORKLOADS
        truth = None if cancel.is_set() or no_truth else await read_truth(control, spec)
    best, above = searcher.answer()
    simulated_s = sum(level.duration_s for level in searcher.levels)
    context = replace(bench.context, model=model, base_url=bench.base_url)
    if version:
        context = replace(context, engine_version=version)
    return capacity_json(
        spec.slo,
        searcher.levels,
        best,
        above,
        truth=truth,
        extra={
            "partial": cancel.is_set(),
            "time_scale": scale,
            "simulated_s": simulated_s,
            "wall_s": time.time() - started,
            "by": spec.by,
            "workload": {
                "name": bench.workload,
                "input_tokens": bench.input_tokens,
                "output_tokens": bench.output_tokens,
                "endpoint": bench.endpoint,
                "prompt_method": prompt_method,
                "rounds": spec.rounds,
            },
            "context": asdict(context),
        },
    )


def _level_dict(level: CapacityLevel) -> dict[str, Any]:
    """The finished level with its verdict (meets_slo, limited_by), as plain JSON data."""
    return json.loads(json.dumps(level_dict(level)))


async def _main(read_stdin: Any) -> int:
    cancel = asyncio.Event()
    install_cancel(cancel)
    try:
        spec = CapacitySpec.from_dict(json.loads(read_stdin()))
    except (ValueError, TypeError, KeyError) as error:
        emit("error", message=f"bad capacity spec on stdin: {error}")
        return 1
    try:
        result = await search(spec, cancel)
    except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError) as error:
        emit("error", message=describe(error))
        return 1
    emit("result", result=result)
    return 0


def main() -> int:
    return asyncio.run(_main(sys.stdin.read))


if __name__ == "__main__":
    sys.exit(main())
