"""Taking the live load readings: the same counters as the after-ready explainer, every few s.

The serving tree's read and CPU counters and the checkpoint's block device through
the load I/O helper (tui.serving.load.io), the shards' page-cache residency (less often: it
is not free on 550 GB), the log's phase (LoadProgress) and per-GPU memory. Each
`sample` turns the seconds since the previous one into a frozen tui.serving.load.live.LiveLoad.
What cannot be read (the process is gone, /proc/PID/io belongs to another user, the
helper failed) becomes the reading's `problem`; it never raises.
"""

from __future__ import annotations

import time

from tui.core.errors import ServedeckError
from tui.gpu.model import GpuBoxSnapshot
from tui.hosts.base import Host
from tui.serving.load.explain import CPU_FLOOR_CORES, LoadExplainer, bound_of
from tui.serving.load.io import IoSample, checkpoint_residency, io_sample
from tui.serving.load.live import LiveLoad, lagging_gpu, with_text
from tui.serving.load.tracker import LoadProgress

LIVE_POLL_S = 3.0  # one helper run per sample: a few seconds is fresh enough for a 30 min load
RESIDENCY_EVERY_SAMPLES = 4  # mincore over 550 GB of shards is not free: every 4th sample


def _rate(a: float | None, b: float | None, dt: float) -> float | None:
    return max(0.0, (b - a) / dt) if a is not None and b is not None and dt > 0 else None


class LiveLoadWatcher:
    """Samples one load and keeps what it saw for the after-ready explanation.

    `explainer` holds every I/O sample of the load and the residency at its start and
    now, so the explanation after ready has each phase's reads and CPU time instead of
    two samples taken once the load is over. A new load (another main PID) starts afresh.
    """

    def __init__(self, host: Host, checkpoint_path: str | None) -> None:
        self.host = host
        self.path = checkpoint_path
        self.pid: int | None = None
        self.explainer = LoadExplainer()
        self.device_peak_bytes_per_s: float | None = None
        self.residency_problem: str | None = None
        self._samples_taken = 0

    @property
    def last(self) -> IoSample | None:
        return self.explainer.samples[-1] if self.explainer.samples else None

    def _follow(self, pid: int | None) -> None:
        if pid == self.pid:
            return
        if self.pid is not None:  # another process: another load
            self.explainer = LoadExplainer()
            self.device_peak_bytes_per_s = None
            self._samples_taken = 0
        else:  # the first PID of this load: rates start from its own counters
            self.explainer.samples.clear()
        self.pid = pid

    async def _residency(self) -> None:
        due = self._samples_taken % RESIDENCY_EVERY_SAMPLES == 0
        self._samples_taken += 1
        if not self.path or not due:
            return
        try:
            residency = await checkpoint_residency(self.host, self.path)
        except ServedeckError as error:
            self.residency_problem = f"residency unknown: {error}"
            return
        if not residency.files:
            why = residency.errors[0] if residency.errors else f"no *.safetensors in {self.path}"
            self.residency_problem = f"residency unknown: {why}"
            return
        self.residency_problem = None
        if self.explainer.residency_before is None:
            self.explainer.residency_before = residency
        self.explainer.residency_now = residency

    async def sample(
        self, progress: LoadProgress, main_pid: int | None, gpu: GpuBoxSnapshot | None = None
    ) -> LiveLoad:
        self._follow(main_pid)
        problem: str | None = None
        current: IoSample | None = None
        await self._residency()
        previous = self.last
        try:
            current = await io_sample(self.host, main_pid, self.path)
        except ServedeckError as error:
            problem = f"load counters unreadable: {error}"
        read = cpu = device_rate = None
        bound = "unknown"
        if current is not None:
            if main_pid is None:
                problem = "no main PID known: the disk's figures only"
            elif current.tree_alive is False:
                problem = f"serving process {main_pid} is gone"
            elif current.tree_read_bytes is None and current.tree_unreadable:
                rest = "read rate from the disk only" if current.device else "read rate unknown"
                problem = (
                    f"/proc/{main_pid}/io unreadable ({current.tree_unreadable} processes "
                    f"of another user): {rest}"
                )
            if current.tree_alive is not False:
                self.explainer.observe(current)
        if current is not None and previous is not None and current.tree_alive is not False:
            dt = current.at_s - previous.at_s
            read = _rate(previous.tree_read_bytes, current.tree_read_bytes, dt)
            cpu = _rate(previous.tree_cpu_s, current.tree_cpu_s, dt)
            device_rate = _rate(previous.device_read_bytes, current.device_read_bytes, dt)
            if device_rate is not None:
                self.device_peak_bytes_per_s = max(device_rate, self.device_peak_bytes_per_s or 0)
            reads = read if read is not None else device_rate
            if reads is None:  # no read figure at all: busy CPU is all that can be told
                bound = "cpu" if cpu is not None and cpu >= CPU_FLOOR_CORES else "unknown"
            else:
                bound = bound_of(reads * dt, cpu and cpu * dt, dt)
        problem = problem or self.residency_problem
        lag = lagging_gpu(gpu) if progress.phase == "weights" else None
        before, now = self.explainer.residency_before, self.explainer.residency_now
        live = LiveLoad(
            phase=progress.phase,
            phase_elapsed_s=progress.phase_elapsed_s,
            bound=bound,
            read_bytes_per_s=read,
            cpu_cores=cpu,
            device=current.device if current else None,
            device_read_bytes_per_s=device_rate,
            device_peak_bytes_per_s=self.device_peak_bytes_per_s,
            cache_resident_pct=now.resident_pct if now else None,
            cache_resident_start_pct=before.resident_pct if before else None,
            lagging_gpu=lag[0] if lag else None,
            problem=problem,
            text="",
            at_s=time.time(),
        )
        return with_text(live, lag)
