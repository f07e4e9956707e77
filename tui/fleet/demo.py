"""`servedeck fleet --demo N`: N light simulated boxes on this machine, no process per box.

A full SimBox runs a server, an engine and a worker per GPU: twenty of them would
swamp a laptop. A light box keeps what the fleet reads: a real vLLM-format log file
(the simulator's shard bar and line format, stamped on a schedule) that the fleet
reads back through the same tail and LoadTracker as a real host, a unit state, a
GPU sample that follows the load, and the `Engine 000:` stats line for the metrics.
Boxes differ in model, size, state and load: most serve, several are loading at
different shards, one fails its load, one has stopped with leftovers, one is
unreachable.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tui.core.config import demo_profile
from tui.fleet.deck_probe import HostProbe
from tui.fleet.model import FleetRow
from tui.fleet.rows import build_row
from tui.gpu.model import GpuBoxSnapshot, GpuSample
from tui.hosts.local import LocalHost
from tui.logs.tail import follow_file
from tui.serving.load.tracker import LoadTracker
from tui.serving.metrics import metrics_from_log
from tui.serving.readiness import Readiness
from tui.serving.unit.service import UnitState
from tui.sim import spec
from tui.sim.vlog import shard_bar

if TYPE_CHECKING:
    from tui.sim.deck import SimDeck

# (model, shards, GPUs, weights GiB per GPU, load seconds)
MODELS: tuple[tuple[str, int, int, float, float], ...] = (
    ("moonshotai/Kimi-K2.5", 64, 8, 68.0, 1800.0),
    ("MiniMaxAI/MiniMax-M2.5", 24, 4, 57.0, 600.0),
    ("zai-org/GLM-5", 48, 8, 52.0, 1200.0),
    ("Qwen/Qwen3-235B-A22B", 24, 4, 55.0, 500.0),
    ("meta-llama/Llama-3.3-70B-Instruct", 30, 2, 66.0, 300.0),
)
# A serving box opened from the fleet loads this fast before its console shows it serving.
SERVING_LOAD_S = 2.0
KINDS = ("serving", "loading", "serving", "failed", "loading", "unreachable", "stopped")
_FAIL_ERROR = (
    "ValueError: The output_size of gate's and up's weight = 192 is not divisible "
    "by weight quantization block_n = 128."
)


def demo_kind(index: int, count: int) -> str:
    """Every fleet of 5+ gets one failed and one unreachable box; the rest serve or load."""
    if count >= 5 and index == count - 1:
        return "unreachable"
    if count >= 4 and index == count - 2:
        return "failed"
    if count >= 7 and index == count - 3:
        return "stopped"
    return "loading" if index % 3 == 1 else "serving"


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
    _next_stats_s: float = 0.0

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

    def _stats(self, at_s: float) -> str:
        rng = random.Random(f"{self.seed}:{int(at_s)}")
        running = rng.randint(0, 24)
        gen = running * rng.uniform(18, 40)
        return self._line(
            at_s,
            "INFO",
            "loggers.py:257",
            f"Engine 000: Avg prompt throughput: {gen * 3:.1f} tokens/s, "
            f"Avg generation throughput: {gen:.1f} tokens/s, Running: {running} reqs, "
            f"Waiting: {rng.randint(0, 3) if running > 20 else 0} reqs, "
            f"GPU KV cache usage: {min(99.0, running * 3.7):.1f}%, Prefix cache hit rate: 0.0%",
        )

    def advance(self, now_s: float) -> None:
        """Append every line due since the last call (at most the last 200 of them)."""
        due = [(t, text) for t, text in self._schedule() if self._written_until_s < t <= now_s]
        if self.kind == "serving" and now_s >= self.ready_at_s:
            start = max(self._next_stats_s, self.ready_at_s + 10, now_s - 100)
            t = start
            while t <= now_s:
                due.append((t, self._stats(t)))
                t += 10.0
            self._next_stats_s = t
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
                util = rng.uniform(55, 98) if serving else 3.0
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


class DemoProbe:
    """A light box read through the fleet's own pieces: file tail, LoadTracker, row builder."""

    def __init__(self, box: LightBox, host: LocalHost) -> None:
        self.box = box
        self.name = box.name
        self.host = host

    async def poll(self) -> FleetRow:
        box = self.box
        base = FleetRow(
            host=box.name, reachable=True, source="demo", label=box.model, route="simulated"
        )
        if box.kind == "unreachable":
            return build_row(
                FleetRow(
                    host=box.name,
                    reachable=False,
                    source="demo",
                    label=box.model,
                    route="simulated",
                ),
                errors=(
                    f"{box.name}: cannot connect: connection refused (simulated unreachable box)",
                ),
            )
        now = time.time()
        box.advance(now)
        lines = [
            line
            async for line in follow_file(
                self.host, str(box.log_path), initial_lines=300, follow=False
            )
        ]
        tracker = LoadTracker()
        tracker.feed_many(lines)
        progress = tracker.snapshot(now) if lines else None
        state, _ = box.phase_fraction(now)
        unit = UnitState(
            unit="vllm.service",
            load_state="loaded",
            active_state=state,
            sub_state="running" if state == "active" else "dead",
            result="exit-code" if state == "failed" else "success",
            main_pid=None,
            started_at_s=box.started_s,
            exit_status=1 if state == "failed" else None,
            control_group=None,
            n_restarts=0,
        )
        serving = progress is not None and str(progress.phase) == "serving" and state == "active"
        readiness = Readiness(
            bool(serving),
            bool(serving),
            (box.model,) if serving else (),
            0.004 if serving else None,
            None,
            now,
        )
        metrics = None
        if progress is not None and progress.engine_stats is not None:
            metrics = metrics_from_log(progress.engine_stats)
        # The simulator knows every process it started: each box's leftovers are counted.
        leftovers = 2 if box.kind == "stopped" else 0
        return build_row(
            base,
            unit=unit,
            progress=progress,
            readiness=readiness,
            metrics=metrics,
            gpus=box.gpu_snapshot(now),
            leftovers=leftovers,
        )

    async def close(self) -> None:
        return None


class DemoFleet:
    """N light boxes in one temporary folder, removed on close."""

    def __init__(self, count: int, *, seed: int = 0) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="servedeck-fleet-demo-"))
        now = time.time()
        host = LocalHost(label="simulator")
        self.boxes = []
        for index in range(count):
            rng = random.Random(seed * 1000 + index)
            model, shards, gpus, weights_gib, load_s = MODELS[index % len(MODELS)]
            kind = demo_kind(index, count)
            if kind == "loading":
                started = now - load_s * rng.uniform(0.1, 0.7)
            elif kind == "failed":
                started = now - load_s * 0.5
            else:
                started = now - load_s - rng.uniform(600, 7200)
            self.boxes.append(
                LightBox(
                    f"box-{index + 1:02d}",
                    self.folder,
                    kind,
                    model,
                    shards,
                    gpus,
                    weights_gib,
                    load_s,
                    started,
                    seed * 1000 + index,
                )
            )
        self.probes: list[HostProbe] = [DemoProbe(box, host) for box in self.boxes]

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def full_demo_deck(box: LightBox, *, read_only: bool = False, load_s: float = 45.0) -> SimDeck:
    """Enter on a light box: a full simulated box (real processes) that is that host.

    Started only when the operator opens it, with the row's model and GPU count: a
    serving box opens serving (its short load done before the console shows it), a
    loading one loads, a failed box fails its load again, a stopped one stays stopped.
    Blocks while a serving box loads: call it from a thread.
    """
    from dataclasses import replace

    from tui.sim.box import SimBox, SimServerOptions
    from tui.sim.deck import SIM_LABEL, SimDeck

    served = box.model.split("/")[-1].lower()
    unit = f"vllm-{served}.service"
    options = SimServerOptions(
        model=box.model,
        served_model_name=served,
        shards=box.shards,
        tp=box.gpus,
        fail_at_shard=box.shards // 3 if box.kind == "failed" else None,
        orphans_on_stop=2,
    )
    serving = box.kind == "serving"
    sim = SimBox(
        load_seconds=SERVING_LOAD_S if serving else load_s,
        options=options,
        gpu_count=box.gpus,
        unit_name=unit,
    )
    if box.kind != "stopped":
        sim.start()
    if serving:
        sim.wait_until_ready(timeout_s=SERVING_LOAD_S * 20)
    profile = demo_profile(read_only=read_only)
    profile = replace(
        profile,
        name=box.name,
        description=f"{box.name}: simulated {box.model} (fleet demo)",
        model=replace(profile.model, name=box.model, tp=box.gpus),
        service=replace(profile.service, base_url=sim.base_url, unit=unit),
    )
    return SimDeck(profile, LocalHost(label=SIM_LABEL), sim)
