"""At real time the simulated engine keeps its model's timeline, whatever its own loop costs.

The real engine (its own asyncio task and steps) with a stream reader in the same event
loop that does the HTTP handler's share of CPU work after every token: asyncio's epoll
waits whole milliseconds from when it is entered, so a step slept from its own start
lasted the model's step plus that work, and the simulator's truth moved with the
machine's load. Each step now ends at an absolute deadline (the last one's plus the
model's step). Asserted on the engine's own step ends (each token's `last_token_s`), as
the median over windows of many steps: a window's mean gap is the model's step up to
one step's lateness over the window. A machine that holds the simulator for more than a
step restarts the timeline (the engine counts it: `timeline_restarts`), and that delay
stays in the token times as it should: windows holding a restart are left out, so the
figure depends on the model, not on how loaded the machine is. A block of the whole loop
(as a suspended process) or a stall starts the timeline again: no burst of tokens after.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tui.sim.engine import SimEngine
from tui.sim.spec import ServerSettings

STEP_S = 0.004  # tests/support/sim_fixtures.FAST_OPTIONS' decode step
WINDOW = 60  # steps per window: one step of lateness is 1.7 % of a window's mean gap
WINDOWS = 5  # windows without a restart wanted; a loaded machine streams longer for them
MOST_TOKENS = 2000  # 8 s of steps at most
LOOP_WORK_S = 0.0005  # the loop's CPU work a token (0.1-0.7 ms measured: loop_timer_grain.py)


def _busy(seconds: float) -> None:
    """Busy CPU for `seconds` inside the loop, as a handler formatting a chunk is."""
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pass


@dataclass
class Stream:
    """Each token's step end (loop s), read as a handler does, and the engine's timeline
    restarts counted when it was read (so up to the next step's start)."""

    ends: dict[int, float] = field(default_factory=dict)
    restarts: dict[int, int] = field(default_factory=dict)

    def clean_window_means_s(self) -> list[float]:
        """Mean gap of each disjoint window of WINDOW gaps in which no step restarted the
        timeline (a window from token j holds steps j + 1 .. j + WINDOW)."""
        means: list[float] = []
        first = 2
        while first + WINDOW in self.ends:
            last = first + WINDOW - 1
            restarted = next(
                (k for k in range(first, last + 1) if self.restarts[k] != self.restarts[k - 1]),
                None,
            )
            if restarted is None:
                means.append((self.ends[first + WINDOW] - self.ends[first]) / WINDOW)
                first += WINDOW
            else:
                first = restarted + 1  # the gap after token `restarted` holds the delay
        return means


async def _stream(
    tmp_path: Path,
    tokens: int,
    block_at: int | None = None,
    block_s: float = 0.0,
    enough: Callable[[Stream], bool] = lambda _: False,
) -> Stream:
    """One streamed request through the real engine, its reader doing a handler's work."""
    settings = ServerSettings(str(tmp_path), 0, decode_step_s=STEP_S, prefill_tok_s=1e6)
    engine = SimEngine(settings)
    engine.start()
    seen = Stream()
    try:
        request = engine.submit(8, tokens)
        while not request.finished:
            await request.event.wait()
            request.event.clear()
            if request.last_token_s is not None:
                seen.ends[request.emitted] = request.last_token_s
                seen.restarts[request.emitted] = engine.timeline_restarts
            _busy(LOOP_WORK_S)
            if request.emitted == block_at:
                time.sleep(block_s)  # the whole loop held, as a suspended process is
            if request.emitted % WINDOW == 0 and enough(seen):
                engine.abort(request)
    finally:
        await engine.stop()
    return seen


@pytest.mark.quiet  # step times against the model: the CPU first (tests/support/quiet.py)
async def test_real_time_steps_keep_the_models_step_under_the_loops_own_work(
    tmp_path: Path,
) -> None:
    seen = await _stream(
        tmp_path, MOST_TOKENS, enough=lambda s: len(s.clean_window_means_s()) >= WINDOWS
    )
    means_s = seen.clean_window_means_s()
    held = f"{max(seen.restarts.values())} restarts in {len(seen.ends)} steps"
    assert len(means_s) >= WINDOWS, f"the machine held the simulator beyond a step: {held}"
    # Before: every step lasted the model's 4 ms plus the loop's work (~4.7 ms here).
    error = abs(statistics.median(means_s) - STEP_S) / STEP_S
    assert error < 0.02, ([round(1000 * m, 3) for m in means_s], held)


async def test_a_held_loop_starts_the_timeline_again_without_a_burst(tmp_path: Path) -> None:
    block_s, block_at = 0.1, 20
    seen = await _stream(tmp_path, 60, block_at=block_at, block_s=block_s)
    ends, restarts = seen.ends, seen.restarts
    resumed_s = ends[block_at + 1]  # the step under way when the loop was held
    assert resumed_s - ends[block_at] >= block_s
    assert restarts[block_at + 1] > restarts[block_at]  # held beyond the bound: restarted
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
