"""A level split over worker processes (`python -m tui.bench.runner --worker`), one
shard each, when one core is not enough: their outcomes and client samples gathered."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys

from tui.bench.client_load import ClientSample
from tui.bench.loadgen import LevelRun
from tui.bench.model import RequestOutcome
from tui.bench.prompt_fit import PromptPlan
from tui.bench.workload import BenchSpec


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
