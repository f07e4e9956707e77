"""Drive a capacity search from the CLI or the console, with the GPUs sampled alongside.

`CapacityProcess` runs `python -m tui.bench.capacity.runner` through the
shared `RunnerProcess` and yields its events as dicts; `cancel()` keeps the
finished levels. `GpuRecorder` samples a
GPU source while each level runs (the load generator's process knows only the
server's URL; the deck knows the GPUs) and adds the per-level GPU figures to
the result: mean utilisation and power, peak memory, tokens per joule.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import asdict
from typing import Any

from tui.bench.capacity.search import GpuLevelStats
from tui.bench.driver import BenchError, RunnerProcess
from tui.gpu.model import GpuBoxSnapshot, GpuSource


class CapacityProcess(RunnerProcess[dict[str, Any], dict[str, Any]]):
    """One capacity search in its own process; events stay dicts."""

    module = "tui.bench.capacity.runner"
    label = "capacity search"

    def _event(self, message: dict[str, Any]) -> dict[str, Any]:
        if message.get("event") == "error":
            raise BenchError(f"capacity: {message.get('message', 'failed')}")
        if message.get("event") == "result":
            self.result = message["result"]
        return message


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
        # per level (its search step): an extended level's runs add to its samples
        self.per_level: dict[Any, list[GpuBoxSnapshot]] = {}

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
            self.per_level.setdefault(_step(event.get("level") or {}), []).extend(self._current)

    def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def close(self) -> None:
        self._stop()

    def annotate(self, result: dict[str, Any]) -> dict[str, Any]:
        """The result with each level's `gpu` figures filled in."""
        for level in result.get("levels", []):
            snapshots = self.per_level.get(_step(level), [])
            stats = gpu_level_stats(snapshots, float(level.get("output_throughput", 0.0)))
            level["gpu"] = asdict(stats) if stats else {}
        return result


def _step(level: dict[str, Any]) -> Any:
    """A level's place in the search (a rate level's `concurrency` is its peak in flight)."""
    return level.get("search_step", level.get("concurrency"))
