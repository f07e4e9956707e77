"""Drive a capacity search from the CLI or the console, with the GPUs sampled alongside.

`CapacityProcess` starts `python -m tui.bench.capacity_runner` and yields its
events as dicts; `cancel()` keeps the finished levels. `GpuRecorder` samples a
GPU source while each level runs (the load generator's process knows only the
server's URL; the deck knows the GPUs) and adds the per-level GPU figures to
the result: mean utilisation and power, peak memory, tokens per joule.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Any

from tui.bench.capacity import GpuLevelStats
from tui.bench.capacity_runner import CapacitySpec
from tui.bench.driver import _PROJECT_ROOT, BenchError
from tui.gpu.model import GpuBoxSnapshot, GpuSource


class CapacityProcess:
    """One capacity search in its own process."""

    def __init__(self, spec: CapacitySpec) -> None:
        self.spec = spec
        self._process: asyncio.subprocess.Process | None = None
        self._stderr: deque[str] = deque(maxlen=20)
        self.result: dict[str, Any] | None = None

    async def start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            part for part in (_PROJECT_ROOT, env.get("PYTHONPATH", "")) if part
        )
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tui.bench.capacity_runner",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env, limit=16 * 1024 * 1024,
        )  # fmt: skip
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(self.spec.to_dict()).encode())
        await self._process.stdin.drain()
        self._process.stdin.close()

    def cancel(self) -> None:
        """Stop the level in flight; the result keeps the levels that finished."""
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signal.SIGINT)

    async def kill(self) -> None:
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self._process.wait()

    async def _drain_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        async for raw in self._process.stderr:
            self._stderr.append(raw.decode(errors="replace").rstrip())

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Every event until the process exits; raises BenchError on an `error` event."""
        if self._process is None:
            await self.start()
        assert self._process is not None and self._process.stdout is not None
        reader = asyncio.create_task(self._drain_stderr())
        try:
            async for raw in self._process.stdout:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if event.get("event") == "error":
                    raise BenchError(f"capacity: {event.get('message', 'failed')}")
                if event.get("event") == "result":
                    self.result = event["result"]
                yield event
            await self._process.wait()
            await reader
        finally:
            reader.cancel()
            if self._process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
                await self._process.wait()
        if self.result is None:
            tail = next((line for line in reversed(self._stderr) if line.strip()), "")
            raise BenchError(
                f"capacity search ended (status {self._process.returncode}) without a result"
                + (f": {tail}" if tail else "")
            )


def gpu_level_stats(snapshots: list[GpuBoxSnapshot], output_tok_s: float) -> GpuLevelStats | None:
    """Per-level GPU figures over the box; None when no sample had data.

    Utilisation is the mean over GPUs, power and memory are summed over them;
    tokens per joule = output tok/s / watts (the server's seconds on both sides).
    """
    readings = [s for s in snapshots if s.available and s.samples]
    if not readings:
        return None
    utils = [
        sum(g.utilization_gpu_pct or 0.0 for g in s.samples) / len(s.samples) for s in readings
    ]
    powers = [sum(g.power_w or 0.0 for g in s.samples) for s in readings]
    memory = [sum(g.memory_used_bytes or 0 for g in s.samples) for s in readings]
    power = sum(powers) / len(powers)
    return GpuLevelStats(
        samples=len(readings),
        util_mean_pct=sum(utils) / len(utils),
        memory_used_peak_bytes=max(memory),
        power_mean_w=power,
        tokens_per_joule=output_tok_s / power if power > 0 else None,
    )


class GpuRecorder:
    """Samples a GPU source every `interval_s` between level_start and level events."""

    def __init__(self, source: GpuSource | None, interval_s: float = 0.5) -> None:
        self._source = source
        self._interval_s = interval_s
        self._current: list[GpuBoxSnapshot] = []
        self._task: asyncio.Task[None] | None = None
        self.per_level: list[list[GpuBoxSnapshot]] = []

    async def _loop(self) -> None:
        assert self._source is not None
        while True:
            with contextlib.suppress(Exception):  # a GPU hiccup must not end the search
                self._current.append(await self._source.sample())
            await asyncio.sleep(self._interval_s)

    def on_event(self, event: dict[str, Any]) -> None:
        if self._source is None:
            return
        if event.get("event") == "level_start":
            self._stop()
            self._current = []
            self._task = asyncio.create_task(self._loop())
        elif event.get("event") == "level":
            self._stop()
            self.per_level.append(self._current)

    def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def close(self) -> None:
        self._stop()

    def annotate(self, result: dict[str, Any]) -> dict[str, Any]:
        """The result with each level's `gpu` figures filled in (levels in order)."""
        for level, snapshots in zip(result.get("levels", []), self.per_level, strict=False):
            stats = gpu_level_stats(snapshots, float(level.get("output_throughput", 0.0)))
            level["gpu"] = asdict(stats) if stats else {}
        return result
