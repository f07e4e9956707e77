"""A real vLLM 0.32.0 CPU engine SIGSTOPped mid-stream: the verdict, its kind, the stacks.

While a stream of completions runs, the server's VLLM::EngineCore (found among the
API server's children by its process title) is SIGSTOPped: generated tokens stop
while the API server still answers. ProgressWatch, fed each second from the real
/metrics and the real /proc, must say `stalled` within stall_after_s + 5 s with the
kind "a rank stopped" and the stopped pid in its evidence, whatever /health says
(what it answered is printed, not asserted: that is the finding). The stacks are
dumped with py-spy from the real processes (read-only). SIGCONT: back to `serving`,
and every request of the stream completes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.vllm_harness import VllmServer, record_timing
from tests.support.vllm_procs import descendants
from tui.hosts.local import LocalHost
from tui.serving.metrics import MetricsPoller
from tui.serving.progress.model import ProgressVerdict
from tui.serving.progress.ranks import read_ranks
from tui.serving.progress.stacks import dump_stacks
from tui.serving.progress.watch import ProgressWatch
from tui.sim.procs import process_state

pytestmark = pytest.mark.real_vllm

STALL_AFTER_S = 5.0
POLL_S = 1.0
# Four streams of long requests keep the engine busy at any instant: vLLM's gauges freeze
# at the core's last stats, so a stop between requests would read as idle, not stalled.
STREAMS = 4
MAX_TOKENS = 128
PY_SPY = Path(sys.executable).parent / "py-spy"
PROMPTS = (
    "The operator watched the console while the engine served a long stream of requests",
    "A quiet engine that answers its health check may still have stopped making progress",
)


async def stream(
    client: httpx.AsyncClient, server: VllmServer, index: int, stop: asyncio.Event
) -> list[int]:
    """Completions one after another until `stop`; the status of each."""
    statuses = []
    while not stop.is_set():
        body = {
            "model": server.model,
            "prompt": f"{PROMPTS[index % len(PROMPTS)]}, request {len(statuses)}.",
            "max_tokens": MAX_TOKENS,
            "ignore_eos": True,
            "temperature": 0.0,
        }
        response = await client.post(f"{server.base_url}/v1/completions", json=body)
        statuses.append(response.status_code)
    return statuses


async def verdict_now(
    watch: ProgressWatch, poller: MetricsPoller, client: httpx.AsyncClient, pid: int
) -> ProgressVerdict:
    metrics = await poller.poll(client)
    return await watch.observe(LocalHost(), pid, metrics, None)


async def until(
    state: str,
    watch: ProgressWatch,
    poller: MetricsPoller,
    client: httpx.AsyncClient,
    pid: int,
    timeout_s: float,
    health: tuple[str, list[str]] | None = None,
) -> tuple[ProgressVerdict, float]:
    """Poll each second until the verdict is `state`; (that verdict, seconds it took)."""
    started = time.monotonic()
    verdict = await verdict_now(watch, poller, client, pid)
    while verdict.state != state and time.monotonic() - started < timeout_s:
        if health is not None:  # (the /health URL, what it answered each second)
            url, answers = health
            try:
                answer = await client.get(url, timeout=2.0)
                answers.append(f"{time.monotonic() - started:.0f}s:{answer.status_code}")
            except httpx.HTTPError as error:
                answers.append(f"{time.monotonic() - started:.0f}s:{type(error).__name__}")
        await asyncio.sleep(POLL_S)
        verdict = await verdict_now(watch, poller, client, pid)
    return verdict, time.monotonic() - started


@pytest.mark.skipif(not PY_SPY.exists(), reason="py-spy not installed (test extra)")
async def test_engine_core_sigstop_is_a_stopped_rank(real_vllm_server: VllmServer) -> None:
    server = real_vllm_server
    (core,) = [p for p in descendants(server.pid) if p.cmdline.startswith("VLLM::EngineCore")]
    watch = ProgressWatch(stall_after_s=STALL_AFTER_S)
    poller = MetricsPoller(server.base_url, timeout_s=10.0)
    stop = asyncio.Event()
    stopped = False
    async with httpx.AsyncClient(timeout=300.0) as client:
        streams = [asyncio.create_task(stream(client, server, i, stop)) for i in range(STREAMS)]
        try:
            serving, _ = await until("serving", watch, poller, client, server.pid, 120.0)
            assert serving.state == "serving", serving
            for _ in range(20):  # stop it while the core's last stats say requests run
                metrics = await poller.poll(client)
                if (metrics.running_reqs or 0) > 0:
                    break
                await asyncio.sleep(0.2)

            os.kill(core.pid, signal.SIGSTOP)
            stopped = True
            health: list[str] = []
            stalled, latency_s = await until(
                "stalled",
                watch,
                poller,
                client,
                server.pid,
                STALL_AFTER_S + 30.0,
                (f"{server.base_url}/health", health),
            )
            record_timing("stall detected after SIGSTOP of EngineCore", latency_s)
            print(f"\nSIGSTOP EngineCore pid {core.pid}: stalled after {latency_s:.1f} s")
            print(f"verdict: {stalled.headline()}; evidence: {' | '.join(stalled.evidence)}")
            print(f"/health meanwhile (s since SIGSTOP:status): {' '.join(health)}")
            assert stalled.state == "stalled", stalled
            assert latency_s <= STALL_AFTER_S + 5.0, latency_s
            assert stalled.kind == "rank_stopped", stalled
            assert any(f"pid {core.pid}" in line for line in stalled.evidence), stalled.evidence

            ranks = await read_ranks(LocalHost(), server.pid)
            assert ranks is not None and ranks.ranks, ranks
            dump = await dump_stacks(LocalHost(), ranks, py_spy=str(PY_SPY))
            summary = dump.summary()
            print(f"stacks: {summary}")
            for rank in dump.ranks:
                where = rank.main_thread.innermost if rank.main_thread else rank.error
                print(f"  {rank.label} pid {rank.pid} ({rank.name}): {where} wchan={rank.wchan}")
            assert dump.note is None, dump.note
            assert all(rank.main_thread and rank.main_thread.innermost for rank in dump.ranks), (
                dump.ranks
            )
            assert "EngineCore" in summary, summary
            assert process_state(core.pid) in ("T", "t")  # the dump never resumed it

            os.kill(core.pid, signal.SIGCONT)
            stopped = False
            back, back_s = await until("serving", watch, poller, client, server.pid, 60.0)
            print(f"SIGCONT: {back.headline()} after {back_s:.1f} s")
            assert back.state == "serving", back
        finally:
            if stopped:
                os.kill(core.pid, signal.SIGCONT)
            stop.set()
        statuses = await asyncio.wait_for(asyncio.gather(*streams), 300.0)
    print(
        f"stream: {sum(len(s) for s in statuses)} requests, statuses { ({c for codes in statuses for c in codes}) }"
    )
    assert all(code == 200 for codes in statuses for code in codes), statuses
