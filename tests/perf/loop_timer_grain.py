"""How much of a simulated decode step is the event loop's own CPU time: the step of a
one-stream run lasts the model's step plus the work done while it sleeps.

Why: asyncio's epoll selector waits in whole milliseconds, rounded up from the moment it
is entered, so a 4 ms sleep that the loop enters after h ms of other work (the HTTP
handler writing the step's token) ends at 4 + h ms, not 4 (for h under 1 ms). The
simulator's TPOT at one stream is then its model step plus its own per-step CPU time,
which moves with the machine's clock between runs: the shared shift that
bench_interval_coverage.py finds in TPOT and no interval over one run's requests sees.
    .venv/bin/python tests/perf/loop_timer_grain.py [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

STEP_S = 0.004  # tests/support/sim_fixtures.FAST_OPTIONS' decode step


def work(seconds: float) -> None:
    """Busy CPU for `seconds`, as a handler formatting and writing a chunk is."""
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pass


async def steps(handler_s: float, count: int) -> list[float]:
    """Step lengths in ms, each a sleep to its model end while a task does `handler_s`."""
    loop = asyncio.get_running_loop()
    found = []
    for _ in range(count):
        start = loop.time()
        loop.call_soon(work, handler_s)  # runs before the loop waits, as the handler does
        await asyncio.sleep(max(start + STEP_S - loop.time(), 0.0))  # as tui.sim.engine
        found.append(1000 * (loop.time() - start))
    return found


async def main(count: int) -> None:
    print(f"model step {1000 * STEP_S:.3f} ms; {count} steps each")
    for handler_s in (0.0, 0.0001, 0.0003, 0.0006):
        found = await steps(handler_s, count)
        print(f"loop work {1000 * handler_s:.1f} ms a step: step mean"
              f" {statistics.fmean(found):.3f} ms, p50 {statistics.median(found):.3f} ms")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    asyncio.run(main(parser.parse_args().steps))
