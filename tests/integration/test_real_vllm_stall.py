"""A real vLLM 0.32.0 CPU engine's ranks SIGSTOPped, busy and idle: the verdict, its kind, stacks.

Busy: while four streams of completions run, the server's VLLM::EngineCore (found among
the API server's children by its process title) is SIGSTOPped at whatever moment the
streams are at: generated tokens stop while the API server still answers. ProgressWatch,
fed each second from the real /metrics, the real /proc and the server's log (as the console
feeds it), must say `stalled` within stall_after_s + 5 s with the kind "a rank stopped" and
the stopped pid in its evidence, whatever /health says (what it answered is printed: that
is the finding). vLLM's running/waiting gauges are the core's last published stats and
freeze with it, at 0 when it stopped between steps: the verdict must not need them. The
stacks are dumped with py-spy from the real processes (read-only). SIGCONT: back to
`serving`, and every request completes. On loaded cores the same gauges read 0 at most scrapes
while the streams run (the scrape is answered between the engine's steps: 11 of 12 beside two
CPU burners): `serving` must come from the tokens counted over the interval, not the gauges.

Idle: with nothing running, the core SIGSTOPped reads `unknown` (its gauges froze at 0:
nothing is known to wait, yet a stopped core is no idle engine), never `idle` or `serving`;
a stream begun then (its access line is logged with its headers) turns it `stalled`, "a rank
stopped"; SIGCONT: the stream completes.

Worker: the CPU build runs the model in a VLLM::Worker under the EngineCore even at TP=1
(API server -> EngineCore -> Worker), so the same session server gives a worker rank to stop
while streams run: `stalled`, "a rank stopped" naming the Worker's pid, the EngineCore
waiting on it not named; SIGCONT: back to `serving`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
STREAMS = 4
MAX_TOKENS = 128
PY_SPY = Path(sys.executable).parent / "py-spy"
PROMPT = "The operator watched the console while the engine served a long stream of requests"


class LogTail:
    """The server log's lines written since the last read, whole lines only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size
        self.partial = ""

    def new_lines(self) -> list[str]:
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        self.offset += len(data)
        *lines, self.partial = (self.partial + data.decode(errors="replace")).split("\n")
        return lines


class Observer:
    """One refresh, as the console makes it: the log into the watch, then /metrics and /proc."""

    def __init__(self, server: VllmServer, client: httpx.AsyncClient) -> None:
        self.server = server
        self.client = client
        self.watch = ProgressWatch(stall_after_s=STALL_AFTER_S)
        self.poller = MetricsPoller(server.base_url, timeout_s=10.0)
        self.log = LogTail(server.log_path)
        self.seen: list[str] = []  # each verdict's state, in order
        self.readings: list[str] = []  # each verdict with the figures it read, for failures

    async def verdict(self) -> ProgressVerdict:
        self.watch.feed_log(self.log.new_lines())
        metrics = await self.poller.poll(self.client)
        verdict = await self.watch.observe(LocalHost(), self.server.pid, metrics, None)
        self.seen.append(verdict.state)
        rate = metrics.generation_tokens_per_s
        self.readings.append(
            f"{verdict.state}: {metrics.running_reqs} running, {metrics.waiting_reqs} waiting, "
            f"{'?' if rate is None else f'{rate:.0f}'} tok/s"
        )
        return verdict

    async def until(
        self, state: str, timeout_s: float, health: list[str] | None = None
    ) -> tuple[ProgressVerdict, float]:
        """Each second until the verdict is `state`; (that verdict, seconds it took)."""
        started = time.monotonic()
        verdict = await self.verdict()
        while verdict.state != state and time.monotonic() - started < timeout_s:
            if health is not None:  # what /health answered each second
                try:
                    answer = await self.client.get(f"{self.server.base_url}/health", timeout=2.0)
                    health.append(f"{time.monotonic() - started:.0f}s:{answer.status_code}")
                except httpx.HTTPError as error:
                    health.append(f"{time.monotonic() - started:.0f}s:{type(error).__name__}")
            await asyncio.sleep(POLL_S)
            verdict = await self.verdict()
        return verdict, time.monotonic() - started


async def one_stream(client: httpx.AsyncClient, server: VllmServer, prompt: str) -> tuple[int, int]:
    """One streamed completion: (its status, the completion tokens its usage chunk counts)."""
    body = {
        "model": server.model,
        "prompt": prompt,
        "max_tokens": MAX_TOKENS,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    tokens = 0
    async with client.stream("POST", f"{server.base_url}/v1/completions", json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: {"):
                tokens = (json.loads(line[6:]).get("usage") or {}).get("completion_tokens", tokens)
    return response.status_code, tokens


async def streams(
    client: httpx.AsyncClient, server: VllmServer, index: int, stop: asyncio.Event
) -> list[tuple[int, int]]:
    """Streams one after another until `stop`."""
    answers: list[tuple[int, int]] = []
    while not stop.is_set():
        answers.append(await one_stream(client, server, f"{PROMPT}, {index}.{len(answers)}."))
    return answers


@contextmanager
def sigstopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def titled(server: VllmServer, title: str) -> int:
    """The pid of the server's one process whose title starts with `title`."""
    (found,) = [p for p in descendants(server.pid) if p.cmdline.startswith(title)]
    return found.pid


async def stop_while_busy(
    seen: Observer, client: httpx.AsyncClient, pid: int, role: str
) -> ProgressVerdict:
    """SIGSTOP `pid` while streams run: stalled, "a rank stopped" naming it; SIGCONT: serving,
    and every stream completes whole. Returns the stalled verdict."""
    server = seen.server
    stop = asyncio.Event()
    busy = [asyncio.create_task(streams(client, server, i, stop)) for i in range(STREAMS)]
    try:
        serving, _ = await seen.until("serving", 120.0)
        assert serving.state == "serving", serving
        await asyncio.sleep(POLL_S)  # the stop lands wherever the streams are
        before_stop = len(seen.seen)
        with sigstopped(pid):
            health: list[str] = []
            stalled, latency_s = await seen.until("stalled", STALL_AFTER_S + 30.0, health)
            record_timing(f"stall detected after SIGSTOP of a busy {role}", latency_s)
            print(f"\nbusy: SIGSTOP {role} pid {pid}: {latency_s:.1f} s to stalled")
            print(f"verdict: {stalled.headline()}; evidence: {' | '.join(stalled.evidence)}")
            print(f"/health meanwhile (s since SIGSTOP:status): {' '.join(health)}")
            assert stalled.state == "stalled", (stalled, seen.seen)
            assert latency_s <= STALL_AFTER_S + 5.0, latency_s
            assert stalled.kind == "rank_stopped", stalled
            assert any(
                line.startswith(f"{role} (pid {pid}) stopped: state T") for line in stalled.evidence
            ), stalled
            assert "idle" not in seen.seen[before_stop:], seen.seen

            ranks = await read_ranks(LocalHost(), server.pid)
            assert ranks is not None and ranks.ranks, ranks
            dump = await dump_stacks(LocalHost(), ranks, py_spy=str(PY_SPY))
            print(f"stacks: {dump.summary()}")
            assert dump.note is None, dump.note
            assert all(r.main_thread and r.main_thread.innermost for r in dump.ranks), dump
            assert role in dump.summary()
            assert process_state(pid) in ("T", "t")  # the dump never resumed it
        back, back_s = await seen.until("serving", 60.0)
        record_timing(f"back to serving after SIGCONT of the {role}", back_s)
        print(f"SIGCONT: {back.headline()} after {back_s:.1f} s")
        assert back.state == "serving", (back, seen.readings[-12:])
    except BaseException:
        for task in busy:
            task.cancel()
        raise
    finally:
        stop.set()
    answers = await asyncio.wait_for(asyncio.gather(*busy), 300.0)
    flat = [answer for stream in answers for answer in stream]
    print(f"streams: {len(flat)} completions, statuses {sorted({s for s, _ in flat})}")
    assert all(answer == (200, MAX_TOKENS) for answer in flat), flat
    return stalled


@pytest.mark.skipif(not PY_SPY.exists(), reason="py-spy not installed (test extra)")
async def test_engine_core_sigstop_busy_then_idle(real_vllm_server: VllmServer) -> None:
    server = real_vllm_server
    core = titled(server, "VLLM::EngineCore")
    async with httpx.AsyncClient(timeout=300.0) as client:
        seen = Observer(server, client)
        await stop_while_busy(seen, client, core, "EngineCore")

        idle, _ = await seen.until("idle", 60.0)
        assert idle.state == "idle", idle
        with sigstopped(core):
            seen.seen.clear()
            await seen.until("never", STALL_AFTER_S + 2.0)
            print(f"idle: SIGSTOP EngineCore: read {seen.seen}")
            assert set(seen.seen) == {"unknown"}, seen.seen
            late = asyncio.create_task(one_stream(client, server, f"{PROMPT}, late."))
            stalled, latency_s = await seen.until("stalled", STALL_AFTER_S + 10.0)
            record_timing("stall detected after a stream began at a stopped idle core", latency_s)
            print(f"a stream begun: {latency_s:.1f} s to {stalled.headline()}")
            print(f"evidence: {' | '.join(stalled.evidence)}")
            assert (stalled.state, stalled.kind) == ("stalled", "rank_stopped"), stalled
            assert not late.done()
        assert await asyncio.wait_for(late, 60.0) == (200, MAX_TOKENS)
        after, _ = await seen.until("idle", 30.0)
        assert after.state == "idle", after


@pytest.mark.skipif(not PY_SPY.exists(), reason="py-spy not installed (test extra)")
async def test_worker_rank_sigstop_busy(real_vllm_server: VllmServer) -> None:
    """The CPU build runs the model in a Worker under the EngineCore even at TP=1 (its
    platform turns the `uni` executor into `mp`): the Worker stopped leaves the core waiting
    for its answer (state S, not T), and the verdict must name the Worker."""
    server = real_vllm_server
    core, worker = titled(server, "VLLM::EngineCore"), titled(server, "VLLM::Worker")
    ranks = await read_ranks(LocalHost(), server.pid)
    assert ranks is not None, "the process helper gave no ranks"
    names = {rank.pid: rank.name for rank in ranks.ranks}
    print(f"\nranks: {sorted(names.items())}")
    assert names.get(core, "").startswith("VLLM::EngineCore"), names
    assert names.get(worker, "").startswith("VLLM::Worker"), names
    async with httpx.AsyncClient(timeout=300.0) as client:
        seen = Observer(server, client)
        stalled = await stop_while_busy(seen, client, worker, "Worker")
        stopped = [line.split(",")[0] for line in stalled.evidence if " stopped: state " in line]
        assert stopped == [f"Worker (pid {worker}) stopped: state T"], stalled
        after, _ = await seen.until("idle", 60.0)
        assert after.state == "idle", after
