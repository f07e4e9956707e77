"""At real time the simulated engine keeps its model's timeline, whatever its own loop costs.

The real engine (its own asyncio task and steps) with a stream reader in the same event
loop that does the HTTP handler's share of CPU work after every token: asyncio's epoll
waits whole milliseconds from when it is entered, so a step slept from its own start
lasted the model's step plus that work, and the simulator's truth moved with the
machine's load. Each step now ends at an absolute deadline (the last one's plus the
model's step). Asserted on the engine's own step ends (each token's `last_token_s`), as
the median over windows of many steps: a window's mean gap is the model's step up to
one step's lateness over the window, and one hiccup of a loaded machine spoils one
window, not the median. A block of the whole loop (as a suspended process) or a stall
starts the timeline again: no burst of tokens afterwards.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import pytest

from tui.sim.engine import SimEngine
from tui.sim.spec import ServerSettings

STEP_S = 0.004  # tests/support/sim_fixtures.FAST_OPTIONS' decode step
WINDOW = 60  # steps per window: one step of lateness is 1.7 % of a window's mean gap
WINDOWS = 5
LOOP_WORK_S = 0.0005  # the loop's CPU work a token (0.1-0.7 ms measured: loop_timer_grain.py)


def _busy(seconds: float) -> None:
    """Busy CPU for `seconds` inside the loop, as a handler formatting a chunk is."""
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pass


async def _token_ends(
    tmp_path: Path, tokens: int, block_at: int | None = None, block_s: float = 0.0
) -> dict[int, float]:
    """Each token's step end (loop s) for one streamed request, read as a handler does."""
    settings = ServerSettings(str(tmp_path), 0, decode_step_s=STEP_S, prefill_tok_s=1e6)
    engine = SimEngine(settings)
    engine.start()
    ends: dict[int, float] = {}
    try:
        request = engine.submit(8, tokens)
        while not request.finished:
            await request.event.wait()
            request.event.clear()
            if request.last_token_s is not None:
                ends[request.emitted] = request.last_token_s
            _busy(LOOP_WORK_S)
            if request.emitted == block_at:
                time.sleep(block_s)  # the whole loop held, as a suspended process is
    finally:
        await engine.stop()
    return ends


async def test_real_time_steps_keep_the_models_step_under_the_loops_own_work(
    tmp_path: Path,
) -> None:
    ends = await _token_ends(tmp_path, WINDOW * WINDOWS + 1)
    means_s = [
        (ends[first + WINDOW] - ends[first]) / WINDOW
        for first in range(1, WINDOW * WINDOWS + 1 - WINDOW + 1, WINDOW)
        if first in ends and first + WINDOW in ends
    ]
    assert len(means_s) >= WINDOWS - 1, sorted(ends)
    # Before: every step lasted the model's 4 ms plus the loop's work (~4.5-4.9 ms here).
    error = abs(statistics.median(means_s) - STEP_S) / STEP_S
    assert error < 0.02, [round(1000 * m, 3) for m in means_s]


async def test_a_held_loop_starts_the_timeline_again_without_a_burst(tmp_path: Path) -> None:
    block_s, block_at = 0.1, 20
    ends = await _token_ends(tmp_path, 60, block_at=block_at, block_s=block_s)
    resumed_s = ends[block_at + 1]  # the step under way when the loop was held
    assert resumed_s - ends[block_at] >= block_s
    # Caught up, the 100 ms would come out as 25 tokens at once; kept to its bound, ten
    # steps' time after the hold holds ten steps' tokens (one more for a late edge).
    after = [n for n, end_s in ends.items() if resumed_s < end_s <= resumed_s + 10 * STEP_S]
    assert len(after) <= 11, sorted(round(1000 * (ends[n] - resumed_s), 2) for n in after)


@pytest.mark.parametrize("time_scale", [1.0, 2.0])
async def test_a_stall_is_not_caught_up_afterwards(tmp_path: Path, time_scale: float) -> None:
    settings = ServerSettings(
        str(tmp_path), 0, decode_step_s=STEP_S, prefill_tok_s=1e6, time_scale=time_scale
    )
    step_real_s = STEP_S / time_scale
    engine = SimEngine(settings)
    engine.start()
    try:
        request = engine.submit(8, 200)
        while request.emitted < 10:
            await asyncio.sleep(0.001)
        engine.stall(0.015)  # under CATCH_UP_S: caught up, it would come out as a burst
        stalled_at = request.emitted
        stall_ends_s = engine.stall_until_s
        while request.emitted < stalled_at + 4:
            await request.event.wait()
            request.event.clear()
        # Three steps after the one under way, each a whole step after the stall's end
        # (before, a fast clock pulled them back onto the timeline: tokens at once).
        assert request.last_token_s is not None
        assert request.last_token_s - stall_ends_s >= 3 * step_real_s * 0.99
    finally:
        await engine.stop()
