"""How much of a simulated decode step is the event loop's own CPU time: the step of a
one-stream run lasts the model's step plus the work done while it sleeps.

Why: asyncio's epoll selector waits in whole milliseconds, rounded up from the moment it
is entered, so a 4 ms sleep that the loop enters after h ms of other work (the HTTP
handler writing the step's token) ends at 4 + h ms, not 4 (for h under 1 ms). The
simulator's TPOT at one stream is then its model step plus its own per-step CPU time,
which moves with the machine's clock between runs: the shared shift that
bench_interval_coverage.py finds in TPOT and no interval over one run's requests sees.
tui.sim.engine now ends each step at an absolute deadline (the last one's plus the step,
a late start caught up within one step): the second figures, which keep the model's step.
    .venv/bin/python tests/perf/loop_timer_grain.py [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from tui.sim.engine import timeline_start_s

STEP_S = 0.004  # tests/support/sim_fixtures.FAST_OPTIONS' decode step


def work(seconds: float) -> None:
    """Busy CPU for `seconds`, as a handler formatting and writing a chunk is."""
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pass


async def steps(handler_s: float, count: int, deadline: bool) -> list[float]:
    """Step lengths in ms (end to end), each a sleep while a task does `handler_s`: to the
    model's end from the step's own start, or to an absolute deadline (tui.sim.engine)."""
    loop = asyncio.get_running_loop()
    found = []
    end = ideal_end = loop.time()
    for _ in range(count):
        start = loop.time()
        if deadline:  # the engine's own rule: late by at most a step is caught up
            start = timeline_start_s(start, ideal_end, STEP_S, fast=False)
        ideal_end = start + STEP_S
        loop.call_soon(work, handler_s)  # runs before the loop waits, as the handler does
        await asyncio.sleep(max(ideal_end - loop.time(), 0.0))
        found.append(1000 * (loop.time() - end))
        end = loop.time()
    return found


async def main(count: int) -> None:
    print(f"model step {1000 * STEP_S:.3f} ms; {count} steps each")
    for handler_s in (0.0, 0.0001, 0.0003, 0.0006):
        own = await steps(handler_s, count, deadline=False)
        kept = await steps(handler_s, count, deadline=True)
        print(f"loop work {1000 * handler_s:.1f} ms a step: step mean"
              f" {statistics.fmean(own):.3f} ms, p50 {statistics.median(own):.3f} ms;"
              f" to a deadline: mean {statistics.fmean(kept):.3f} ms,"
              f" p50 {statistics.median(kept):.3f} ms")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    asyncio.run(main(parser.parse_args().steps))
