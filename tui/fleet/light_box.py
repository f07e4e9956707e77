"""One light simulated box of `servedeck fleet --demo N`: no process, only what the fleet
reads.

A real vLLM-format log file (the simulator's shard bar and line format, stamped on a
schedule) that the fleet reads back through the same tail and LoadTracker as a real
host, a unit state, a GPU sample that follows the load, and the metrics a server nobody
sends requests to would give (the console opened on the box says the same).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from tui.gpu.model import GpuBoxSnapshot, GpuSample
from tui.serving.metrics import ServerMetrics
from tui.sim import spec
from tui.sim.vlog import shard_bar

_FAIL_ERROR = (
    "ValueError: The output_size of gate's and up's weight = 192 is not divisible "
    "by weight quantization block_n = 128."
)


@dataclass
class LightBox:
    """One simulated box: a log written on a schedule, a unit state, GPUs that follow it."""

    name: str
    folder: Path
    kind: str
    model: str
    shards: int
    gpus: int
    weights_gib: float
    load_s: float
    started_s: float  # wall clock of the (simulated) start
    seed: int
    _written_until_s: float = 0.0

    @property
    def log_path(self) -> Path:
        return self.folder / f"{self.name}.log"

    def _stamp(self, at_s: float) -> str:
        return time.strftime("%m-%d %H:%M:%S", time.localtime(at_s))

    def _line(self, at_s: float, level: str, source: str, message: str) -> str:
        return (
            f"(APIServer pid={1000 + self.seed}) {level} {self._stamp(at_s)} [{source}] {message}"
        )

    def _schedule(self) -> list[tuple[float, str]]:
        """Every load line with its (simulated) time; a failed box stops at its crash."""
        s, t0, share = self, self.started_s, spec.LOAD_PHASE_SHARES
        at = t0
        lines = [
            (
                at,
                self._line(
                    at,
                    "INFO",
                    "api_server.py:1897",
                    f"vLLM server version {spec.VLLM_VERSION}, serving model {s.model}",
                ),
            )
        ]
        at += s.load_s * share["starting"]
        lines.append(
            (
                at,
                self._line(
                    at, "INFO", "gpu_model_runner.py:3097", f"Starting to load model {s.model}..."
                ),
            )
        )
        per_shard = s.load_s * share["weights"] / s.shards
        fail_at = s.shards // 3 if s.kind == "failed" else None
        for done in range(0, s.shards + 1):
            lines.append((at + per_shard * done, shard_bar(done, s.shards, per_shard * done)))
            if fail_at is not None and done == fail_at:
                crash = at + per_shard * done
                lines.append(
                    (
                        crash,
                        self._line(crash, "ERROR", "core.py:843", "EngineCore failed to start."),
                    )
                )
                lines.append((crash, self._line(crash, "ERROR", "core.py:843", _FAIL_ERROR)))
                return lines
        at += per_shard * s.shards
        lines.append(
            (
                at,
                self._line(
                    at,
                    "INFO",
                    "default_loader.py:501",
                    f"Loading weights took {per_shard * s.shards:.2f} seconds",
                ),
            )
        )
        at += s.load_s * share["compile"]
        lines.append(
            (
                at,
                self._line(
                    at,
                    "INFO",
                    "backends.py:215",
                    f"torch.compile took {s.load_s * share['compile']:.2f} s in total",
                ),
            )
        )
        at += s.load_s * share["kv_cache"]
        lines.append(
            (
                at,
                self._line(at, "INFO", "gpu_worker.py:298", "Available KV cache memory: 14.20 GiB"),
            )
        )
        lines.append(
            (
                at,
                self._line(
                    at,
                    "INFO",
                    "gpu_model_runner.py:3900",
                    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%",
                ),
            )
        )
        at += s.load_s * share["cuda_graphs"]
        lines.append(
            (
                at,
                self._line(
                    at,
                    "INFO",
                    "gpu_model_runner.py:3980",
                    "Graph capturing finished in 12 secs, took 0.62 GiB",
                ),
            )
        )
        lines.append(
            (
                at,
                self._line(
                    at,
                    "INFO",
                    "api_server.py:1971",
                    "Starting vLLM server on http://127.0.0.1:8000",
                ),
            )
        )
        at += s.load_s * share["api"]
        lines.append(
            (at, self._line(at, "INFO", "launcher.py:46", "Application startup complete."))
        )
        return lines

    @property
    def ready_at_s(self) -> float:
        return self.started_s + self.load_s

    def idle_metrics(self, now_s: float) -> ServerMetrics | None:
        """What a serving light box's /metrics would say: no client ever sends it a request,
        so nothing runs and no token is made (the console opened on it says the same)."""
        if self.kind != "serving" or now_s < self.ready_at_s:
            return None
        return ServerMetrics(
            running_reqs=0,
            waiting_reqs=0,
            kv_cache_usage_pct=0.0,
            prompt_tokens_per_s=0.0,
            generation_tokens_per_s=0.0,
            preemptions_total=0,
            preemptions_in_interval=0,
            ttft_p50_s=None,
            ttft_p90_s=None,
            ttft_p99_s=None,
            itl_p50_s=None,
            itl_p90_s=None,
            itl_p99_s=None,
            interval_s=None,
            source="metrics",
            at_s=now_s,
        )

    def advance(self, now_s: float) -> None:
        """Append every load line due since the last call (at most the last 200 of them).

        No `Engine 000:` stats line: vLLM logs one only under traffic, and none comes.
        """
        due = [(t, text) for t, text in self._schedule() if self._written_until_s < t <= now_s]
        if due:
            with self.log_path.open("a", encoding="utf-8") as handle:
                handle.writelines(text + "\n" for _, text in sorted(due, key=lambda x: x[0])[-200:])
        self._written_until_s = now_s

    def phase_fraction(self, now_s: float) -> tuple[str, float]:
        """(unit state, share of the weights on the GPUs) now."""
        if self.kind == "stopped":
            return "inactive", 0.0
        elapsed = now_s - self.started_s
        weights_end = self.load_s * (
            spec.LOAD_PHASE_SHARES["starting"] + spec.LOAD_PHASE_SHARES["weights"]
        )
        frac = min(1.0, max(0.0, elapsed / weights_end))
        if self.kind == "failed":
            return "failed", 0.0
        return "active", frac

    def gpu_snapshot(self, now_s: float) -> GpuBoxSnapshot:
        state, frac = self.phase_fraction(now_s)
        rng = random.Random(f"gpu:{self.seed}:{int(now_s)}")
        serving = now_s >= self.ready_at_s and self.kind == "serving"
        samples = []
        total = spec.GPU_MEMORY_TOTAL_BYTES
        for index in range(self.gpus):
            if state in ("failed", "inactive"):
                used = (
                    int(self.weights_gib * spec.GIB * 0.7)
                    if state == "inactive" and index < 2
                    else 0
                )
                util = 0.0
            else:
                used = int(frac * self.weights_gib * spec.GIB) + (
                    int(22 * spec.GIB) if serving else 0
                )
                util = 0.0 if serving else 3.0  # idle (no traffic) or loading weights
            hot = 16.0 if self.seed % 5 == 2 and index == 0 else 0.0
            samples.append(
                GpuSample(
                    index=index,
                    memory_used_bytes=min(used + 600 * spec.MIB, total),
                    memory_total_bytes=total,
                    utilization_gpu_pct=util,
                    temperature_c=34 + util * 0.4 + hot + rng.uniform(0, 2),
                    power_w=90 + util * 4.5,
                )
            )
        return GpuBoxSnapshot(
            source="simulated", taken_at_s=now_s, samples=tuple(samples), simulated=True
        )
