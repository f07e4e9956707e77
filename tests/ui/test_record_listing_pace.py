"""The recorder's process listing repeats slowly while nothing a leftover changes has changed.

The wide listing reads every process of the host (~10-25 ms), the main share of an idle
console's CPU; it runs every RECORD_PROCS_S only after the GPU holders or the unit changed,
else every RECORD_PROCS_STEADY_S. The intervals are shortened here and the listings counted
(the host's listing is replaced by a counter: what is tested is the console's schedule).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import tui.app.console_record as console_record
from tests.support.canned_host import canned_deck
from tests.support.waiting import pilot_wait
from tui.app import ServedeckApp
from tui.core.config import load_profile_file
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample
from tui.procs import ProcListing

REPO = Path(__file__).resolve().parents[2]
PROFILE = load_profile_file(REPO / "profiles" / "local-vllm.toml")


def gpu_with_holders(*pids: int) -> GpuBoxSnapshot:
    processes = tuple(GpuProcessUsage(pid, 0, 1024**3, "python") for pid in pids)
    sample = GpuSample(index=0, processes=processes)
    return GpuBoxSnapshot("test", time.time(), available=True, samples=(sample,))


async def test_listing_repeats_slowly_while_steady_and_at_once_after_a_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listed: list[float] = []

    async def counted_listing(host: Any, gpu: Any, context: Any) -> ProcListing:
        listed.append(time.monotonic())
        return ProcListing("canned", "boot-1", time.time(), ())

    monkeypatch.setattr(console_record, "list_gpu_processes", counted_listing)
    monkeypatch.setattr(console_record, "RECORD_PROCS_S", 0.2)
    monkeypatch.setattr(console_record, "RECORD_PROCS_STEADY_S", 4.0)
    app = ServedeckApp(PROFILE, canned_deck(replace(PROFILE, name="pace")))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot_wait(pilot, lambda: len(listed) >= 1, lambda: "no first listing", 15.0)
        # A holder appears: listed at the next tick. (The canned box has no GPU source; its
        # unavailable samples keep the last good one.)
        app.gpus.last = app.gpus.last_good = gpu_with_holders(101)
        await pilot_wait(pilot, lambda: len(listed) >= 2, lambda: "no listing after a change")
        steady_from = len(listed)
        await pilot.pause(2.0)  # 10 ticks of 0.2 s, nothing changed, under the 4 s repeat
        assert len(listed) == steady_from, "a steady console listed again before its repeat"
        await pilot_wait(
            pilot, lambda: len(listed) > steady_from, lambda: "no repeat after 4 s", 10.0
        )
        changed_from = len(listed)
        app.gpus.last = app.gpus.last_good = gpu_with_holders(101, 202)
        await pilot_wait(
            pilot, lambda: len(listed) > changed_from, lambda: "no listing after a new holder"
        )
