"""SmiGpuSource: GPUs of any Host through `nvidia-smi`, for machines with no Python.

One long-lived `nvidia-smi --query-gpu ... -lms N` stream feeds the per-GPU
metrics (no process start per tick); the process list is asked for every few
seconds and the topology and versions once. The stream is restarted with
backoff when it ends (the Host reconnects underneath). Parsing lives in
tui.gpu.smi_parse.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Sequence

from tui.core.errors import CommandNotFound, HostError, HostUnreachable, ServedeckError
from tui.core.tasks import cancel_and_wait
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample, GpuStatic
from tui.gpu.smi_parse import (
    QUERY_GPU_FIELDS,
    SmiTopology,
    parse_compute_apps,
    parse_query_gpu_line,
    parse_query_gpu_static,
    parse_topo,
    parse_versions,
)
from tui.hosts.base import Host
from tui.hosts.reader import run_read

__all__ = [
    "SmiGpuSource",
    "compute_apps_argv",
    "parse_compute_apps",
    "parse_query_gpu_line",
    "parse_topo",
    "query_gpu_argv",
]

SOURCE_NAME = "nvidia-smi"
NO_DRIVER = "no NVIDIA driver (nvidia-smi not found)"


def query_gpu_argv(interval_s: float, fields: Sequence[str] = QUERY_GPU_FIELDS) -> list[str]:
    return [
        "nvidia-smi",
        f"--query-gpu={','.join(fields)}",
        "--format=csv,noheader,nounits",
        "-lms",
        str(max(50, round(interval_s * 1000))),
    ]


def compute_apps_argv() -> list[str]:
    return [
        "nvidia-smi",
        "--query-compute-apps=gpu_uuid,pid,used_memory,process_name",
        "--format=csv,noheader,nounits",
    ]


class SmiGpuSource:
    """A Host's GPUs from nvidia-smi; `sample()` returns the latest lines, it never waits long."""

    name = SOURCE_NAME

    def __init__(
        self,
        host: Host,
        interval_s: float = 1.0,
        *,
        apps_interval_s: float | None = None,
        restart_backoff_s: Sequence[float] = (1.0, 2.0, 5.0, 10.0, 30.0),
        first_sample_timeout_s: float = 10.0,
    ) -> None:
        self.host = host
        self.interval_s = interval_s
        self.apps_interval_s = apps_interval_s or max(2.0, interval_s)
        self.restart_backoff_s = tuple(restart_backoff_s)
        self.first_sample_timeout_s = first_sample_timeout_s
        self.stream_starts = 0
        self._samples: dict[int, tuple[GpuSample, float]] = {}  # index -> (sample, monotonic)
        self._statics: dict[int, GpuStatic] = {}
        self._processes: tuple[GpuProcessUsage, ...] = ()
        self._topology = SmiTopology()
        self._driver_version: str | None = None
        self._cuda_version: str | None = None
        self._error: str | None = None
        self._first_batch = asyncio.Event()
        self._first_apps = asyncio.Event()  # the process list read after the first tick
        self._tasks: list[asyncio.Task[None]] = []

    # -- background tasks ----------------------------------------------------------

    def _start(self) -> None:
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._stream_loop(), name="nvidia-smi stream"),
            asyncio.create_task(self._apps_loop(), name="nvidia-smi apps"),
            asyncio.create_task(self._read_host_facts(), name="nvidia-smi facts"),
        ]

    async def _stream_loop(self) -> None:
        failures = 0
        while True:
            got_lines = False
            unreachable = False
            seen_this_tick: set[int] = set()
            self.stream_starts += 1
            try:
                async for line in self.host.stream(query_gpu_argv(self.interval_s)):
                    sample = parse_query_gpu_line(line)
                    if sample is None:
                        continue
                    static = parse_query_gpu_static(line)
                    if static is not None and not sample.lost:
                        self._statics[sample.index] = static
                    self._samples[sample.index] = (sample, time.monotonic())
                    got_lines = True
                    failures = 0
                    self._error = None
                    # A tick lists every GPU once: an index seen again starts the next tick,
                    # so the first snapshot waits for a whole tick, never shows half a box.
                    if sample.index in seen_this_tick:
                        self._first_batch.set()
                        seen_this_tick.clear()
                    seen_this_tick.add(sample.index)
            except HostError as error:
                self._error = NO_DRIVER if isinstance(error, CommandNotFound) else str(error)
                unreachable = isinstance(error, HostUnreachable)
            if not got_lines and self._error is None:
                self._error = await self._why_no_lines()
            # The stream ended: a waiting sample() reports what there is (or the error) now.
            self._first_batch.set()
            delay = self.restart_backoff_s[min(failures, len(self.restart_backoff_s) - 1)]
            # A host not reached says nothing of nvidia-smi (and the SSH host backs off its
            # own attempts): no longer wait, or the GPUs stay lost long after a reconnect.
            failures += 0 if unreachable else 1
            await asyncio.sleep(delay)

    async def _why_no_lines(self) -> str:
        """A one-line reason when the stream gave nothing (no driver, tool failing)."""
        try:
            result = await self.host.run(["nvidia-smi", "-L"], timeout_s=15.0)
        except HostError as error:
            return NO_DRIVER if isinstance(error, CommandNotFound) else str(error)
        if result.exit_status == 127:
            return NO_DRIVER
        message = (result.stdout.strip() or result.stderr.strip()).splitlines()
        return f"nvidia-smi: {message[0]}" if message else "nvidia-smi printed nothing"

    async def _apps_loop(self) -> None:
        await self._first_batch.wait()
        while True:
            try:
                with contextlib.suppress(ServedeckError):
                    # Every few seconds: in the host's long-lived reader, no session each.
                    result = await run_read(self.host, compute_apps_argv(), timeout_s=15.0)
                    if result.ok:
                        index_by_uuid = {s.uuid: s.index for s in self._statics.values() if s.uuid}
                        self._processes = parse_compute_apps(result.stdout, index_by_uuid)
            finally:
                self._first_apps.set()  # read (or failed): a waiting first sample goes on
            await asyncio.sleep(self.apps_interval_s)

    async def _read_host_facts(self) -> None:
        with contextlib.suppress(ServedeckError):
            topo = await self.host.run(["nvidia-smi", "topo", "-m"], timeout_s=30.0)
            if topo.ok:
                self._topology = parse_topo(topo.stdout)
        for argv in (["nvidia-smi", "--version"], ["nvidia-smi"]):
            with contextlib.suppress(ServedeckError):
                result = await self.host.run(argv, timeout_s=30.0)
                driver, cuda = parse_versions(result.stdout)
                if driver:
                    self._driver_version, self._cuda_version = driver, cuda
                    return

    # -- the snapshot -------------------------------------------------------------

    async def sample(self) -> GpuBoxSnapshot:
        """The latest tick; the first call waits for a complete one: GPU lines and processes.

        One-shot `procs`, `kill` and `summary` take the first sample only, so it must
        carry the per-process GPU data (read right after the tick's GPU lines).
        """
        self._start()
        deadline = time.monotonic() + self.first_sample_timeout_s
        if not self._first_batch.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._first_batch.wait(), self.first_sample_timeout_s)
        if self._samples and not self._first_apps.is_set():
            left_s = max(0.0, deadline - time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._first_apps.wait(), left_s)
        return self._snapshot()

    def _snapshot(self) -> GpuBoxSnapshot:
        now = time.monotonic()
        if not self._samples:
            error = self._error or "waiting for nvidia-smi"
            return GpuBoxSnapshot(
                source=self.name, taken_at_s=time.time(), available=False, error=error
            )
        newest = max(received for _, received in self._samples.values())
        stale_after_s = max(5 * self.interval_s, 10.0)
        if self._error is not None or now - newest > stale_after_s:
            # The stream is down (connection cut, nvidia-smi gone): these lines are no
            # sample of now. The console keeps the last good one with its age.
            why = self._error or f"no data from nvidia-smi for {now - newest:.0f} s"
            return GpuBoxSnapshot(
                source=self.name, taken_at_s=time.time(), available=False, error=why
            )
        by_gpu: dict[int, list[GpuProcessUsage]] = {}
        for usage in self._processes:
            by_gpu.setdefault(usage.gpu_index, []).append(usage)
        samples, statics = [], []
        for index in sorted(self._samples):
            sample, received = self._samples[index]
            if not sample.lost and newest - received > stale_after_s:
                sample = GpuSample(
                    index=index,
                    lost=True,
                    error=f"no data from nvidia-smi for {newest - received:.0f} s",
                )
            elif not sample.lost:
                sample = dataclasses.replace(sample, processes=tuple(by_gpu.get(index, ())))
            samples.append(sample)
            statics.append(self._static_with_topology(index))
        return GpuBoxSnapshot(
            source=self.name,
            taken_at_s=time.time(),
            statics=tuple(statics),
            samples=tuple(samples),
            driver_version=self._driver_version,
            cuda_version=self._cuda_version,
            topology=self._topology.matrix,
            error=self._error,
        )

    def _static_with_topology(self, index: int) -> GpuStatic:
        static = self._statics.get(index) or GpuStatic(
            index=index, name="unknown GPU", uuid="", bus_id="", memory_total_bytes=None
        )
        topo = self._topology
        numa = topo.numa_affinity[index] if index < len(topo.numa_affinity) else None
        cpus = topo.cpu_affinity[index] if index < len(topo.cpu_affinity) else None
        nvlinks = None
        if index < len(topo.matrix):
            counts = [
                int(c[2:]) for c in topo.matrix[index] if c.startswith("NV") and c[2:].isdigit()
            ]
            nvlinks = max(counts) if counts else None
        return dataclasses.replace(
            static, numa_node=numa, cpu_affinity=cpus, nvlink_active_links=nvlinks
        )

    async def aclose(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(tasks)
