"""The collector's scheduling: a hung host never holds up the others, polls never overlap.

The hosts here are small probe objects (the collector's only contract is `poll()`), so the
timing is exact; the same collector over real sshd servers is tests/integration/test_fleet_sshd.py.
"""

from __future__ import annotations

import asyncio
import time

from tui.fleet.collector import FleetCollector
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state, summarize

ACTIVE = {"now": 0, "max": 0}  # polls running at once, over every probe


class _Probe:
    def __init__(self, name: str, delay_s: float = 0.0, crash: bool = False) -> None:
        self.name = name
        self.delay_s = delay_s
        self.crash = crash
        self.running = 0
        self.max_running = 0
        self.polls = 0

    async def poll(self) -> FleetRow:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        ACTIVE["now"] += 1
        ACTIVE["max"] = max(ACTIVE["max"], ACTIVE["now"])
        self.polls += 1
        try:
            await asyncio.sleep(self.delay_s)
            if self.crash:
                raise RuntimeError("parser bug")
            return FleetRow(host=self.name, reachable=True, phase="serving", gpu_count=8)
        finally:
            self.running -= 1
            ACTIVE["now"] -= 1

    async def close(self) -> None:
        return None


async def test_a_hung_host_is_marked_in_one_refresh_and_does_not_stall_the_others() -> None:
    fast = [_Probe(f"fast{i}") for i in range(5)]
    hung = _Probe("hung", delay_s=3600)
    collector = FleetCollector([*fast, hung], host_timeout_s=0.5)
    try:
        started = time.monotonic()
        rows = await collector.refresh()
        assert time.monotonic() - started < 2.0
        by_host = {row.host: row for row in rows}
        assert all(by_host[p.name].reachable for p in fast)
        assert by_host["hung"].reachable is False
        assert host_state(by_host["hung"]) == "slow"
        # Next refreshes: the hung poll is not started again on top of itself.
        for _ in range(3):
            rows = await collector.refresh()
        assert hung.polls == 1 and hung.max_running == 1
        assert all(p.polls == 4 for p in fast)
        assert summarize(rows).line().startswith("5/6 up: 5 serving, 1 slow")
    finally:
        await collector.close()
    assert hung.running == 0  # closing the collector ends the hung poll


async def test_a_crashing_poll_is_a_row_not_an_exit() -> None:
    collector = FleetCollector([_Probe("ok"), _Probe("bad", crash=True)], host_timeout_s=2)
    try:
        rows = await collector.refresh()
    finally:
        await collector.close()
    assert rows[0].reachable and not rows[1].reachable
    assert rows[1].error is not None and "parser bug" in rows[1].error


async def test_concurrency_limit_and_adaptive_interval() -> None:
    probes = [_Probe(f"h{i}", delay_s=0.05) for i in range(20)]
    collector = FleetCollector(probes, host_timeout_s=5, concurrency=4)
    ACTIVE.update(now=0, max=0)
    try:
        await collector.refresh()
    finally:
        await collector.close()
    assert all(p.polls == 1 for p in probes)
    assert ACTIVE["max"] == 4
    assert collector.next_interval_s(2.0) >= 2.0
    collector.refresh_durations_s.append(3.0)
    assert collector.next_interval_s(2.0) == 6.0  # slow refreshes stretch the interval
