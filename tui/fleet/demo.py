"""`servedeck fleet --demo N`: N light simulated boxes on this machine, no process per box.

A full SimBox runs a server, an engine and a worker per GPU: twenty of them would
swamp a laptop. A light box keeps what the fleet reads: a real vLLM-format log file
(the simulator's shard bar and line format, stamped on a schedule) that the fleet
reads back through the same tail and LoadTracker as a real host, a unit state, a
GPU sample that follows the load, and the metrics of a server no client sends
requests to (idle: the full box opened on a row has no traffic either).
Boxes differ in model, size, state and load: most serve, several are loading at
different shards, one fails its load, one has stopped with leftovers, one is
unreachable.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tui.core.config import demo_profile
from tui.fleet.deck_probe import HostProbe
from tui.fleet.light_box import LightBox
from tui.fleet.model import FleetRow
from tui.fleet.rows import build_row
from tui.hosts.local import LocalHost
from tui.logs.tail import follow_file
from tui.serving.load.tracker import LoadTracker
from tui.serving.readiness import Readiness
from tui.serving.unit.service import UnitState

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
# A serving box opened from the fleet replays its past load at once; this long at most.
OPEN_SERVING_TIMEOUT_S = 40.0
KINDS = ("serving", "loading", "serving", "failed", "loading", "unreachable", "stopped")


def demo_kind(index: int, count: int) -> str:
    """Every fleet of 5+ gets one failed and one unreachable box; the rest serve or load."""
    if count >= 5 and index == count - 1:
        return "unreachable"
    if count >= 4 and index == count - 2:
        return "failed"
    if count >= 7 and index == count - 3:
        return "stopped"
    return "loading" if index % 3 == 1 else "serving"


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
        metrics = box.idle_metrics(now) if serving else None
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


def full_demo_deck(box: LightBox, *, read_only: bool = False) -> SimDeck:
    """Enter on a light box: a full simulated box (real processes) that is that host.

    Started only when the operator opens it, with the row's model, GPU count and load:
    the load resumes where the row's is (same length, same start, the lines already due
    stamped as they were), so a loading box opens at the row's shard and a serving box
    opens serving since the row's ready time; a failed box fails its load again at the
    same shard, a stopped one stays stopped. Blocks while a serving box catches up: call
    it from a thread.
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
    sim = SimBox(load_seconds=box.load_s, options=options, gpu_count=box.gpus, unit_name=unit)
    if box.kind != "stopped":
        sim.start(load_started_s=box.started_s)
    if box.kind == "serving":
        sim.wait_until_ready(timeout_s=OPEN_SERVING_TIMEOUT_S)
    profile = demo_profile(read_only=read_only)
    profile = replace(
        profile,
        name=box.name,
        description=f"{box.name}: simulated {box.model} (fleet demo)",
        model=replace(profile.model, name=box.model, tp=box.gpus),
        service=replace(profile.service, base_url=sim.base_url, unit=unit),
    )
    return SimDeck(profile, LocalHost(label=SIM_LABEL), sim)
