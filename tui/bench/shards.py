"""A level split over worker processes (`python -m tui.bench.runner --worker`), one
shard each, when one core is not enough: their outcomes and client samples gathered,
and the worker's side (`run_shard`), its outcomes sent back as events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from typing import Any

from tui.bench.client import make_client
from tui.bench.client_load import ClientMeter, ClientSample
from tui.bench.loadgen import LevelRun, run_level
from tui.bench.model import RequestOutcome
from tui.bench.process_io import api_key_for, emit
from tui.bench.prompt_fit import PromptPlan
from tui.bench.workload import BenchSpec, api_url, endpoint_path
from tui.bench.workloads import workload_prompts


async def sharded_level(
    spec: BenchSpec,
    words: int,
    plan: PromptPlan | None,
    *,
    processes: int,
    concurrency: int,
    rate: float | None,
    num_requests: int,
    seed: int,
    cancel: asyncio.Event,
    run: LevelRun,
    worker_tokens: dict[int, int],
    samples: list[ClientSample],
) -> None:
    """Split a level over worker processes; their outcomes land in `run`, their client
    samples in `samples`."""
    shares = [concurrency // processes + (i < concurrency % processes) for i in range(processes)]
    counts = [num_requests // processes + (i < num_requests % processes) for i in range(processes)]
    workers = []
    for index in range(processes):
        job = {
            "spec": spec.to_dict(),
            "concurrency": shares[index],
            "num_requests": counts[index],
            "rate": rate / processes if rate else None,
            "words": words,
            "plan": plan.to_dict() if plan is not None else None,
            "seed": seed * 1000 + index,
        }
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tui.bench.runner",
            "--worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert worker.stdin is not None
        worker.stdin.write(json.dumps(job).encode() + b"\n")
        await worker.stdin.drain()
        worker.stdin.close()
        workers.append(worker)

    async def read(index: int, worker: asyncio.subprocess.Process) -> None:
        assert worker.stdout is not None
        async for raw in worker.stdout:
            message = json.loads(raw)
            if message["event"] == "outcome":
                run.outcomes.append(RequestOutcome.from_dict(message["outcome"]))
            elif message["event"] == "live":
                worker_tokens[index] = message["tokens"]
            elif message["event"] == "end":
                run.cancelled += message["cancelled"]
                run.partial = run.partial or message["partial"]
                if message.get("client"):
                    samples.append(ClientSample.from_dict(message["client"]))
        await worker.wait()

    async def forward_cancel() -> None:
        await cancel.wait()
        for worker in workers:
            with contextlib.suppress(ProcessLookupError):
                worker.send_signal(signal.SIGTERM)

    forwarder = asyncio.create_task(forward_cancel())
    try:
        await asyncio.gather(*(read(i, w) for i, w in enumerate(workers)))
    finally:
        forwarder.cancel()
    worker_tokens.clear()


async def run_shard(job: dict[str, Any], cancel: asyncio.Event) -> None:
    spec = BenchSpec.from_dict(job["spec"])
    url = api_url(spec.base_url, endpoint_path(spec.endpoint))
    plan = PromptPlan.from_dict(job["plan"]) if job.get("plan") else None
    prompts = workload_prompts(spec, job["words"], job["num_requests"], job["seed"], plan)
    run = LevelRun()

    async def live() -> None:
        while True:
            await asyncio.sleep(spec.progress_interval_s)
            emit("live", tokens=sum(o.chunks for o in run.live.values()))

    def send(outcome: RequestOutcome) -> None:
        emit("outcome", outcome=outcome.to_dict())

    async with make_client(
        max_connections=max(1, job["concurrency"]),
        read_timeout_s=spec.read_timeout_s,
        connect_timeout_s=spec.connect_timeout_s,
        transport=spec.transport,
        api_key=api_key_for(spec),
    ) as client:
        ticker = asyncio.create_task(live())
        meter = ClientMeter()
        meter.start()
        try:
            await run_level(
                client, url, spec, prompts, concurrency=job["concurrency"], rate=job["rate"],
                seed=job["seed"], cancel=cancel, run=run, on_outcome=send,
            )  # fmt: skip
        finally:
            ticker.cancel()
            sample = await meter.stop()
    emit("live", tokens=0)
    emit("end", cancelled=run.cancelled, partial=run.partial, client=sample.to_dict())
