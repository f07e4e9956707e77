"""A synthetic recording: a week of an 8-GPU box at the recorder's resolution, built fast.

Written straight through the schema (not the writer thread) so a 7-day file takes
seconds; the rows are what the writer would store (the same packing), with values
that move like a serving box's (memory plateaus, utilization and power jitter).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from pathlib import Path

import tui.record
from tui.gpu.model import GpuSample
from tui.record.model import pack_gpu_samples
from tui.record.retention import DAY_S
from tui.record.schema import connect

GIB = 1024**3


def box_samples(rng: random.Random, gpus: int = 8, t: float = 0.0) -> tuple[GpuSample, ...]:
    busy = (int(t) // 600) % 3 != 0  # ten-minute stretches of serving and idling
    return tuple(
        GpuSample(
            index=i,
            memory_used_bytes=int((88.5 + (0.5 * rng.random() if busy else 0)) * GIB),
            memory_total_bytes=96 * GIB,
            utilization_gpu_pct=float(rng.randint(60, 100) if busy else 0),
            utilization_memory_pct=float(rng.randint(20, 70) if busy else 0),
            temperature_c=float(rng.randint(55, 78)),
            power_w=round(rng.uniform(300, 600) if busy else rng.uniform(60, 90), 2),
            power_limit_w=600.0,
            sm_clock_mhz=rng.choice((1980, 2010, 2100)) if busy else 180,
            memory_clock_mhz=14001,
            pcie_gen=5,
            pcie_width=16,
            pcie_tx_bytes_per_s=rng.uniform(1e8, 5e9) if busy else rng.uniform(0, 1e6),
            pcie_rx_bytes_per_s=rng.uniform(1e8, 5e9) if busy else rng.uniform(0, 1e6),
            ecc_uncorrected_errors=0,
        )
        for i in range(gpus)
    )


def build_week(db: Path, now_s: float, days: float = 7.0, gpus: int = 8, seed: int = 1) -> int:
    """Ticks at 1 s for the last 24 h and 10 s before (as retention leaves them), metrics every
    5 s, an event a minute; returns the number of GPU ticks written."""
    rng = random.Random(seed)
    connection = connect(db, writer=True)
    start = now_s - days * DAY_S
    ticks = 0
    with connection:
        connection.execute("BEGIN")
        t = start
        while t <= now_s:
            step = 1.0 if now_s - t < DAY_S else 10.0
            blob = pack_gpu_samples(box_samples(rng, gpus, t))
            connection.execute(
                "INSERT INTO gpu_ticks (ts_ms, res_s, data) VALUES (?, ?, ?)",
                (int(t * 1000), int(step), blob),
            )
            ticks += 1
            t += step
        connection.executemany(
            "INSERT INTO metrics (ts_ms, running_reqs, waiting_reqs, kv_cache_usage_pct) VALUES (?, ?, ?, ?)",
            [
                (int(m * 1000), rng.randint(0, 64), rng.randint(0, 3), rng.uniform(0, 100))
                for m in (start + 5 * k for k in range(int(days * DAY_S / 5)))
            ],
        )
        connection.executemany(
            "INSERT INTO events (ts_ms, kind, source, text, gpu) VALUES (?, ?, ?, ?, ?)",
            [
                (int((start + 60 * k) * 1000), "log", "log", f"WARNING synthetic event {k}", None)
                for k in range(int(days * DAY_S / 60))
            ],
        )
    connection.close()
    return ticks


def cached_week(db: Path, now_s: float) -> None:
    """build_week's file at db, built once per version of what writes it and kept in the
    test cache (~11 s of CPU a build): keyed by now_s, this module and tui/record's code."""
    from tests.support.vllm_install import cache_root

    digest = hashlib.sha256(repr(now_s).encode())
    sources = [Path(__file__), *sorted(Path(tui.record.__file__).parent.glob("*.py"))]
    for source in sources:
        digest.update(source.read_bytes())
    cached = cache_root().parent / "recordings" / f"week-{digest.hexdigest()[:16]}.sqlite"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        for stale in cached.parent.glob("week-*.sqlite*"):
            stale.unlink(missing_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
        build_week(partial, now_s)
        partial.replace(cached)  # whole or not at all, whichever worker builds it
    shutil.copyfile(cached, db)


def build_night(db: Path, t0: float) -> None:
    """A small night through the real Recorder: the unit starts, 8 GPUs fill 1 GiB a second
    for 60 s, it becomes active at +30, serves (metrics at +40) and fails at +50."""
    from dataclasses import replace

    from tui.gpu.model import GpuBoxSnapshot, GpuStatic
    from tui.record.feed import RecordFeed
    from tui.record.model import MetricsRow
    from tui.record.writer import Recorder
    from tui.serving.unit.service import UnitState

    def unit(active: str, sub: str, pid: int | None, restarts: int = 0) -> UnitState:
        return UnitState(
            "vllm.service", "loaded", active, sub, "success", pid, None, None, None, restarts
        )

    statics = tuple(
        GpuStatic(i, "RTX PRO 6000", f"GPU-{i}", f"0000:{i:02x}:00.0", 96 * GIB) for i in range(8)
    )
    base = GpuSample(
        index=0,
        memory_total_bytes=96 * GIB,
        utilization_gpu_pct=50.0,
        temperature_c=61.0,
        power_w=350.5,
        sm_clock_mhz=1980,
        ecc_uncorrected_errors=0,
    )
    with Recorder(db, host_label="box") as recorder:
        feed = RecordFeed(recorder, "box")
        feed.observe_unit(unit("activating", "start", 10), t0)
        for i in range(60):
            samples = tuple(
                replace(base, index=g, memory_used_bytes=(i + 1) * GIB) for g in range(8)
            )
            feed.observe_gpu(GpuBoxSnapshot("simulated", t0 + i, statics=statics, samples=samples))
        feed.observe_unit(unit("active", "running", 10), t0 + 30)
        recorder.add_metrics(
            MetricsRow(t0 + 40, running_reqs=5, waiting_reqs=2, kv_cache_usage_pct=50.0)
        )
        feed.observe_unit(unit("failed", "failed", None, 1), t0 + 50)
