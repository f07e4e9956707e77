"""The progress verdict against the simulator's real processes: each hang detected and named.

Traffic keeps requests running; each hang is switched on over POST /_sim/fault (or a
real SIGSTOP of the EngineCore); the verdict must read `stalled` with the right kind
within stall_after_s + 5 s, and `serving` again once the hang ends. The detection
latency of each kind is printed (pytest -s) for the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable

import pytest

from tests.support.sim_fixtures import started
from tests.support.sim_traffic import scrape_until, set_fault, streaming_users
from tui.hosts.local import LocalHost
from tui.serving.metrics import MetricsPoller
from tui.serving.progress.model import ProgressVerdict
from tui.serving.progress.watch import ProgressWatch
from tui.sim.box import SimBox, SimServerOptions

N_S = 3.0
OPTIONS = SimServerOptions(
    shards=8, decode_step_s=0.02, decode_alpha=0.02, tp=4, log_interval_s=1.0
)


def traffic(box: SimBox) -> contextlib.AbstractAsyncContextManager[None]:
    """Users streaming long completions back to back: requests always running."""
    body = {"model": "kimi-k2.5-int4", "prompt": "hi", "max_tokens": 400, "stream": True}
    return streaming_users(box, lambda: body)


class Watcher:
    def __init__(self, box: SimBox) -> None:
        self.box = box
        self.watch = ProgressWatch(N_S)
        self.poller = MetricsPoller(box.base_url)
        self.host = LocalHost()
        self.offset = 0

    async def tick(self) -> ProgressVerdict:
        log = self.box.log_path.read_text()
        self.watch.feed_log(log[self.offset :].splitlines())
        self.offset = len(log)
        metrics = await self.poller.poll()
        gpu = await asyncio.to_thread(self.box.snapshot)
        return await self.watch.observe(self.host, self.box.unit.main_pid, metrics, gpu)

    async def until(
        self, done: Callable[[ProgressVerdict], bool], timeout_s: float
    ) -> tuple[ProgressVerdict, float, list[str]]:
        verdicts, took_s = await scrape_until(self.tick, done, timeout_s)
        return verdicts[-1], took_s, [v.state for v in verdicts]


@pytest.fixture
def box(sim_box_factory: Callable[..., SimBox]) -> SimBox:
    return started(sim_box_factory(OPTIONS, load_seconds=1.5, gpu_count=4), timeout_s=60)


def engine_core_pid(box: SimBox) -> int:
    return next(pid for pid, role in box.live_processes() if role == "VLLM::EngineCore")


@pytest.mark.parametrize(
    ("inject", "clear", "kind"),
    [
        ({"stop_rank": 2}, {"stop_rank": None}, "rank_stopped"),
        ("sigstop-engine", "sigcont-engine", "rank_stopped"),
        ({"hang": "spin"}, {"hang": ""}, "gpu_spin"),
        ({"hang": "cpu"}, {"hang": ""}, "cpu_block"),
    ],
    ids=["rank-sigstopped", "enginecore-sigstopped", "collective-spin", "cpu-side-block"],
)
def test_each_hang_is_stalled_with_its_kind(
    box: SimBox, inject: object, clear: object, kind: str
) -> None:
    async def scenario() -> None:
        watcher = Watcher(box)
        async with traffic(box):
            verdict, _, _ = await watcher.until(lambda v: v.state == "serving", 20)
            assert verdict.state == "serving", verdict
            if inject == "sigstop-engine":
                os.kill(engine_core_pid(box), signal.SIGSTOP)
            else:
                await set_fault(box, **inject)  # type: ignore[arg-type]
            verdict, took_s, states = await watcher.until(lambda v: v.state == "stalled", N_S + 8)
            print(f"\n{kind}: stalled after {took_s:.1f} s (N = {N_S:g} s): {verdict.evidence}")
            assert verdict.state == "stalled", (states, verdict)
            assert took_s <= N_S + 5
            assert verdict.kind == kind, verdict
            if clear == "sigcont-engine":
                os.kill(engine_core_pid(box), signal.SIGCONT)
            else:
                await set_fault(box, **clear)  # type: ignore[arg-type]
            back, back_s, _ = await watcher.until(lambda v: v.state == "serving", 15)
            print(f"{kind}: serving again after {back_s:.1f} s")
            assert back.state == "serving", back

    asyncio.run(scenario())


def test_slow_degradation_and_an_idle_box_are_no_stall(box: SimBox) -> None:
    """Slowed 8x the tokens still move: serving, never stalled; with no traffic: idle."""

    async def scenario() -> None:
        watcher = Watcher(box)
        async with traffic(box):
            await watcher.until(lambda v: v.state == "serving", 20)
            await set_fault(box, hang="slow")
            _, _, states = await watcher.until(lambda v: False, N_S + 4)
            await set_fault(box, hang="")
        assert "stalled" not in states, states
        verdict, _, states = await watcher.until(lambda v: v.state == "idle", 15)
        assert verdict.state == "idle", states
        _, _, states = await watcher.until(lambda v: False, N_S + 2)
        assert set(states) == {"idle"}, states

    asyncio.run(scenario())
