"""The simulated GPUs: statics of the seed box, samples from live worker processes.

Memory comes only from `<state>/gpu/<pid>.json` files whose pid is alive with
the same start time (a file left by a dead or recycled pid counts for
nothing), so stopping, orphaning and killing workers show up exactly as on
real hardware. Utilization follows the server's `activity.json` on GPUs that
hold a live server's workers; temperature, power and clocks follow
utilization with first-order lags and seeded noise.
"""

from __future__ import annotations

import math
import os
import random
import time
import uuid
from dataclasses import replace
from pathlib import Path

from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample, GpuStatic
from tui.gpu.procinfo import LocalProcessCache
from tui.sim import spec
from tui.sim.procs import is_alive, read_json

IDLE_TEMPERATURE_C = 31.0
IDLE_POWER_W = 22.0  # no context: P8
LOADED_POWER_W = 88.0  # a CUDA context and full memory, no kernels
BUSY_POWER_SPAN_W = 390.0  # decode is memory bound: ~480 W at full utilization
TEMPERATURE_TAU_S = 12.0
POWER_TAU_S = 1.5
# TP all-reduce traffic per generated token on each GPU: hidden 7168 x bf16 x 61 layers x 2.
ALLREDUCE_BYTES_PER_TOKEN = 7168 * 2 * 61 * 2
WEIGHTS_LOAD_RX_BYTES_PER_S = 1.6e9
# Churn mode (a worst case for the console's drawing): memory each GPU gains per tick.
CHURN_MEMORY_STEP_BYTES = 300 * spec.MIB
CHURN_BASE_MEMORY_BYTES = 8 * spec.GIB


class SimGpuModel:
    """Eight RTX PRO 6000 Blackwell GPUs whose state comes from the state dir."""

    def __init__(
        self,
        state_dir: Path,
        seed: int = 0,
        gpu_count: int = spec.GPU_COUNT,
        churn: bool = False,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.gpu_count = gpu_count
        # Every displayed field of every GPU changes on every snapshot (a perf worst case).
        self.churn = churn
        self._churn_tick = 0
        self._rng = random.Random(seed)
        numa = tuple(spec.GPU_NUMA_NODES[i % len(spec.GPU_NUMA_NODES)] for i in range(gpu_count))
        self.topology = spec.topology_matrix(numa)
        self.statics = tuple(
            GpuStatic(
                index=i,
                name=spec.GPU_NAME,
                uuid=f"GPU-{uuid.UUID(int=random.Random(seed * 97 + i).getrandbits(128))}",
                bus_id=spec.GPU_BUS_IDS[i % len(spec.GPU_BUS_IDS)],
                memory_total_bytes=spec.GPU_MEMORY_TOTAL_BYTES,
                compute_capability=spec.GPU_COMPUTE_CAPABILITY,
                numa_node=numa[i],
                cpu_affinity=spec.NUMA_CPU_AFFINITY.get(numa[i]),
                pcie_max_gen=5,
                pcie_max_width=16,
                power_limit_w=spec.GPU_POWER_LIMIT_W,
            )
            for i in range(gpu_count)
        )
        self._temperature_c = [
            IDLE_TEMPERATURE_C + self._rng.uniform(-1, 2) for _ in range(gpu_count)
        ]
        self._power_w = [IDLE_POWER_W] * gpu_count
        self._last_s: float | None = None
        self._last_tokens: tuple[float, int] | None = None
        self._orphan_pids: set[int] = set()
        self._born_s = time.time()
        # The workers are real local processes: their user and age come from /proc, like NVML's.
        self._details = LocalProcessCache()

    # -- inputs ---------------------------------------------------------------
    def live_processes(self) -> list[GpuProcessUsage]:
        """Worker files whose process is alive and is the same process that wrote them."""
        found: list[GpuProcessUsage] = []
        self._orphan_pids = set()
        folder = self.state_dir / "gpu"
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            data = read_json(path)
            try:
                pid = int(data["pid"])  # type: ignore[call-overload]
                ticks = int(data["start_time_ticks"])  # type: ignore[call-overload]
                index = int(data["gpu_index"])  # type: ignore[call-overload]
                used = int(data["used_bytes"])  # type: ignore[call-overload]
            except (KeyError, TypeError, ValueError):
                continue
            if 0 <= index < self.gpu_count and is_alive(pid, ticks):
                name = str(data.get("process_name", "python3"))
                details = self._details.get(pid)
                found.append(
                    GpuProcessUsage(
                        pid,
                        index,
                        used,
                        name,
                        user=details.user if details else None,
                        started_at_s=details.started_at_s if details else None,
                    )
                )
                if data.get("orphaned"):
                    self._orphan_pids.add(pid)
        self._details.keep_only({usage.pid for usage in found})
        return found

    def activity(self) -> dict[str, object]:
        """The server's activity, or an idle one when that server is gone."""
        data = read_json(self.state_dir / "activity.json")
        pid = data.get("pid")
        if not isinstance(pid, int) or not is_alive(pid):
            return {"phase": "stopped", "utilization_pct": 0.0, "running": 0}
        return data

    # -- the sample -----------------------------------------------------------
    def snapshot(self, now_s: float | None = None) -> GpuBoxSnapshot:
        now = time.time() if now_s is None else now_s
        dt = 0.5 if self._last_s is None else max(now - self._last_s, 0.0)
        self._last_s = now
        processes = self.live_processes()
        activity = self.activity()
        phase = str(activity.get("phase", "stopped"))
        server_util = float(activity.get("utilization_pct", 0.0))  # type: ignore[arg-type]
        server_pids_alive = phase not in ("stopped", "failed")
        token_rate = self._token_rate(now, activity)
        samples = []
        for i, static in enumerate(self.statics):
            mine = tuple(p for p in processes if p.gpu_index == i)
            used = sum(p.used_memory_bytes or 0 for p in mine)
            serving_here = (
                bool(mine)
                and server_pids_alive
                and any(not p.process_name.endswith("orphan") for p in mine)
            )
            util = server_util if serving_here else 0.0
            if util > 0:
                util = min(max(util + self._rng.uniform(-2.0, 2.0), 0.0), 100.0)
            mine = _with_utilization(mine, util)
            samples.append(self._sample(i, static, mine, used, util, phase, token_rate, dt))
        if self.churn:
            self._churn_tick += 1
            samples = [self._churned(sample, self._churn_tick) for sample in samples]
        return GpuBoxSnapshot(
            source="simulated",
            taken_at_s=now,
            statics=self.statics,
            samples=tuple(samples),
            driver_version=spec.DRIVER_VERSION,
            cuda_version=spec.CUDA_VERSION,
            topology=self.topology,
            simulated=True,
        )

    def _token_rate(self, now: float, activity: dict[str, object]) -> float:
        total = int(activity.get("generation_tokens_total", 0))  # type: ignore[call-overload]
        previous = self._last_tokens
        self._last_tokens = (now, total)
        if previous is None or now <= previous[0] or total < previous[1]:
            return 0.0
        return (total - previous[1]) / (now - previous[0])

    def _sample(
        self,
        i: int,
        static: GpuStatic,
        processes: tuple[GpuProcessUsage, ...],
        used: int,
        util: float,
        phase: str,
        token_rate: float,
        dt: float,
    ) -> GpuSample:
        held = bool(processes)
        target_temp = IDLE_TEMPERATURE_C + (6.0 if held else 0.0) + 0.42 * util
        self._temperature_c[i] += (target_temp - self._temperature_c[i]) * (
            1 - math.exp(-dt / TEMPERATURE_TAU_S)
        )
        base_power = LOADED_POWER_W if held else IDLE_POWER_W
        target_power = base_power + BUSY_POWER_SPAN_W * util / 100.0
        self._power_w[i] += (target_power - self._power_w[i]) * (1 - math.exp(-dt / POWER_TAU_S))
        power = min(self._power_w[i] + self._rng.uniform(-1.5, 1.5), spec.GPU_POWER_LIMIT_W)
        if phase == "weights" and held:
            rx = WEIGHTS_LOAD_RX_BYTES_PER_S * self._rng.uniform(0.8, 1.2)
            tx = rx * 0.01
        elif util > 0:
            rx = tx = token_rate * ALLREDUCE_BYTES_PER_TOKEN * self._rng.uniform(0.9, 1.1)
        else:
            rx = tx = 0.0
        busy = util > 0
        return GpuSample(
            index=i,
            memory_used_bytes=used + (3 * spec.MIB if held else 0),
            memory_total_bytes=static.memory_total_bytes,
            utilization_gpu_pct=round(util, 1),
            utilization_memory_pct=round(util * 0.6, 1),
            temperature_c=round(self._temperature_c[i] + self._rng.uniform(-0.3, 0.3), 1),
            power_w=round(max(power, 5.0), 1),
            power_limit_w=spec.GPU_POWER_LIMIT_W,
            sm_clock_mhz=(2430 + self._rng.randrange(-45, 30)) if busy else (1590 if held else 180),
            memory_clock_mhz=14001 if held else 405,
            pcie_gen=5 if held else 1,
            pcie_width=16,
            pcie_tx_bytes_per_s=tx,
            pcie_rx_bytes_per_s=rx,
            ecc_uncorrected_errors=0,
            processes=processes,
        )

    def _churned(self, sample: GpuSample, tick: int) -> GpuSample:
        """The sample with every displayed field moved: duty cycle, power, temperature,
        PCIe traffic, and memory (and its one process) growing by a visible step."""
        i = sample.index
        phase = (tick * 0.37 + i * 0.11) % 1.0
        util = 10.0 + 90.0 * phase
        total = sample.memory_total_bytes or spec.GPU_MEMORY_TOTAL_BYTES
        span = total - CHURN_BASE_MEMORY_BYTES
        grown = (tick * CHURN_MEMORY_STEP_BYTES + i * spec.GIB) % span
        used = CHURN_BASE_MEMORY_BYTES + grown
        if not sample.processes:
            details = self._details.get(os.getpid())
            user = details.user if details else None
            load = GpuProcessUsage(os.getpid(), i, 0, "servedeck-sim-load", user=user)
            sample = replace(sample, processes=(replace(load, started_at_s=self._born_s),))
        processes = sample.processes
        share = used // len(processes)
        processes = _with_utilization(
            tuple(replace(p, used_memory_bytes=share) for p in processes), util
        )
        rate = 1e8 * (1 + (tick + i) % 97)
        return replace(
            sample,
            memory_used_bytes=used,
            utilization_gpu_pct=round(util, 1),
            utilization_memory_pct=round(util * 0.6, 1),
            temperature_c=40.0 + (tick + 3 * i) % 40,
            power_w=100.0 + 480.0 * phase,  # under the 600 W limit
            sm_clock_mhz=1500 + (tick * 7 + i) % 500,
            pcie_tx_bytes_per_s=rate,
            pcie_rx_bytes_per_s=rate * 1.7,
            processes=processes,
        )


def _with_utilization(
    processes: tuple[GpuProcessUsage, ...], util: float
) -> tuple[GpuProcessUsage, ...]:
    """Each process's share of its GPU's utilization, as NVML would state it: the engine's
    workers split it, an orphan does no work (0 %)."""
    working = sum(1 for p in processes if not p.process_name.endswith("orphan"))
    each = round(util / working, 1) if working else 0.0
    return tuple(
        replace(p, sm_util_percent=0.0, memory_util_percent=0.0)
        if p.process_name.endswith("orphan")
        else replace(p, sm_util_percent=each, memory_util_percent=round(each * 0.6, 1))
        for p in processes
    )
