"""ProgressWatch: one refresh's metrics, GPU snapshot, ranks and log -> the verdict.

The console and `servedeck status` share it: the judge stays pure, this reads the ranks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from tui.gpu.model import GpuBoxSnapshot
from tui.hosts.base import Host
from tui.serving.metrics import ServerMetrics
from tui.serving.progress.judge import ProgressJudge
from tui.serving.progress.logwords import request_lines, stall_lines
from tui.serving.progress.model import ProgressInputs, ProgressVerdict, RankReading
from tui.serving.progress.ranks import read_ranks


def gpu_figures(gpu: GpuBoxSnapshot | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(utilization %, power W) of the GPUs holding processes (all when none holds one)."""
    if gpu is None or not gpu.available:
        return (), ()
    live = [s for s in gpu.samples if not s.lost]
    held = [s for s in live if s.processes] or live
    util = tuple(s.utilization_gpu_pct for s in held if s.utilization_gpu_pct is not None)
    power = tuple(s.power_w for s in held if s.power_w is not None)
    return util, power


def inputs_from(
    at_s: float,
    metrics: ServerMetrics | None,
    gpu: GpuBoxSnapshot | None,
    ranks: RankReading | None,
    *,
    loading: bool = False,
    warmup: bool = False,
) -> ProgressInputs:
    util, power = gpu_figures(gpu)
    return ProgressInputs(
        at_s=at_s,
        running_reqs=metrics.running_reqs if metrics else None,
        waiting_reqs=metrics.waiting_reqs if metrics else None,
        generation_tokens_per_s=metrics.generation_tokens_per_s if metrics else None,
        prompt_tokens_per_s=metrics.prompt_tokens_per_s if metrics else None,
        engine_healthy=metrics.engine_healthy if metrics else None,
        gpu_utilization_pct=util,
        gpu_power_w=power,
        ranks=ranks,
        loading=loading,
        warmup=warmup,
    )


class ProgressWatch:
    """The judge of one engine, fed each refresh; `verdict` is the latest."""

    def __init__(self, stall_after_s: float = 30.0) -> None:
        self.judge = ProgressJudge(stall_after_s)
        self.verdict: ProgressVerdict | None = None

    def feed_log(self, texts: Sequence[str]) -> None:
        lines = stall_lines(texts)
        if lines:
            self.judge.feed_log(lines)
        self.judge.feed_requests(request_lines(texts))

    async def observe(
        self,
        host: Host,
        main_pid: int | None,
        metrics: ServerMetrics | None,
        gpu: GpuBoxSnapshot | None,
        *,
        loading: bool = False,
        warmup: bool = False,
    ) -> ProgressVerdict:
        ranks = await read_ranks(host, main_pid)
        at_s = metrics.at_s if metrics is not None else time.time()
        self.verdict = self.judge.update(
            inputs_from(at_s, metrics, gpu, ranks, loading=loading, warmup=warmup)
        )
        return self.verdict
