"""Fleet refresh figures over real sshd: N light boxes (half through a jump), printed, not timed.

Run:  SERVEDECK_FLEET_HOSTS=20 [SERVEDECK_FLEET_CONCURRENCY=32] python -m pytest tests/perf/fleet_sshd.py -s -q -p no:cacheprovider
Set SERVEDECK_FLEET_PROFILE=out.prof to write cProfile stats of the refresh loop.
After the first refresh it refreshes at the pane's pace until every row has its GPUs
(the warm-up, printed), then measures. Prints: refresh p50/p95/max, event-loop lag p99
during refreshes, console CPU (share of one core), peak RSS, SSH connections per host and
on the jump host, the load average, and each refresh's slowest step.
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import time
from pathlib import Path

from tests.support.fleet_fixtures import start_fleet
from tests.support.sshd_fixtures import SshdPair, _children
from tui.fleet.collector import FleetCollector, probes_for
from tui.fleet.groups import load_group
from tui.sim.box import SimBox

HOSTS = int(os.environ.get("SERVEDECK_FLEET_HOSTS", "20"))
CONCURRENCY = int(os.environ.get("SERVEDECK_FLEET_CONCURRENCY", "32"))
TIMEOUT_S = float(os.environ.get("SERVEDECK_FLEET_TIMEOUT", "4"))
REFRESHES = int(os.environ.get("SERVEDECK_FLEET_REFRESHES", "15"))
INTERVAL_S = 2.0
WARMUP_LIMIT_S = 120.0
PROFILE = os.environ.get("SERVEDECK_FLEET_PROFILE", "")  # a path: cProfile stats of the refreshes


def _slowest_steps(collector: FleetCollector) -> str:
    """The slowest part of this refresh over all hosts: `host:step seconds`."""
    worst = ("", "", 0.0)
    for probe in collector.probes:
        for step, took in getattr(probe, "step_s", {}).items():
            if took >= worst[2] and step != "unit+log+gpus":  # a sum of two parallel steps
                worst = (probe.name, step, took)
    return f"{worst[0]}:{worst[1]} {worst[2]:.2f}"


async def _lag_probe(samples: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        await asyncio.sleep(0.01)
        samples.append(time.monotonic() - started - 0.01)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def test_fleet_refresh_figures(
    sshd_pair: SshdPair, serving_box: SimBox, tmp_path: Path, monkeypatch: object
) -> None:
    kinds = [("serving", "loading", "serving", "failed")[i % 4] for i in range(HOSTS)]
    fleet = start_fleet(sshd_pair, serving_box.base_url, tmp_path / "fleet", kinds)
    try:
        fleet.write_group(tmp_path)
        os.chdir(tmp_path)
        collector = FleetCollector(
            probes_for(load_group("lab").members), host_timeout_s=30, concurrency=CONCURRENCY
        )
        first_started = time.monotonic()
        rows = await collector.refresh()
        first_s = time.monotonic() - first_started
        collector.host_timeout_s = TIMEOUT_S
        # Warm-up at the pane's pace until every row has its GPUs (the first nvidia-smi
        # ticks and process lists arrive after the logins): the figures are steady state.
        warmup: list[float] = []
        while not all(row.reachable and row.gpu_count for row in rows):
            assert time.monotonic() - first_started < WARMUP_LIMIT_S, [r.error for r in rows]
            await asyncio.sleep(INTERVAL_S)
            started = time.monotonic()
            rows = await collector.refresh()
            warmup.append(time.monotonic() - started)
            ready = sum(bool(row.reachable and row.gpu_count) for row in rows)
            print(f"warm-up: {ready}/{HOSTS} rows with GPUs, load {os.getloadavg()[0]:.1f}")
        warm_s = time.monotonic() - first_started
        lag: list[float] = []
        stop = asyncio.Event()
        prober = asyncio.create_task(_lag_probe(lag, stop))
        profiler = None
        if PROFILE:  # threads' work runs inline so the profile sees all of the console's CPU
            import cProfile

            async def inline(func, /, *args, **kwargs):  # type: ignore[no-untyped-def]
                return func(*args, **kwargs)

            monkeypatch.setattr(asyncio, "to_thread", inline)  # type: ignore[attr-defined]
            profiler = cProfile.Profile()
            profiler.enable()
        cpu_before = time.process_time()
        wall_before = time.monotonic()
        durations: list[float] = []
        slowest: list[str] = []
        for _ in range(REFRESHES):
            started = time.monotonic()
            rows = await collector.refresh()
            durations.append(time.monotonic() - started)
            slowest.append(_slowest_steps(collector))
            await asyncio.sleep(max(0.0, INTERVAL_S - durations[-1]))
        cpu_share = (time.process_time() - cpu_before) / (time.monotonic() - wall_before)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(PROFILE)
        stop.set()
        await prober
        per_host = [h.connections() for h in fleet.hosts]
        assert sshd_pair.first.process is not None
        jump_connections = len(_children(sshd_pair.first.process.pid))
        reachable = sum(row.reachable for row in rows)
        rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"\nfleet over sshd: {HOSTS} hosts ({HOSTS - HOSTS // 2} direct, {HOSTS // 2} via a jump), "
            f"8 GPUs each (nvidia-smi shim), {CONCURRENCY} polled at once, host timeout {TIMEOUT_S:g} s\n"
            f"first refresh (connect + first samples): {first_s:.2f} s; every row with its "
            f"GPUs after {warm_s:.1f} s (warm-up refreshes: "
            f"{', '.join(f'{d:.2f}' for d in warmup) or 'none'})\n"
            f"refresh over {REFRESHES}: p50 {statistics.median(durations):.2f} s, "
            f"p95 {_pct(durations, 0.95):.2f} s, max {max(durations):.2f} s\n"
            f"event-loop lag p99 {_pct(lag, 0.99) * 1000:.1f} ms, max {max(lag) * 1000:.1f} ms\n"
            f"console CPU {100 * cpu_share:.1f} % of one core (refresh every {INTERVAL_S:g} s)\n"
            f"peak RSS {rss_mib:.0f} MiB\n"
            f"SSH connections: {sum(per_host)} on the {HOSTS} hosts "
            f"(per host: max {max(per_host)}), {jump_connections} on the jump host\n"
            f"reachable rows: {reachable}/{HOSTS}"
        )
        print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        print(
            "refreshes (s, slowest step of each): "
            + ", ".join(f"{d:.2f} ({step})" for d, step in zip(durations, slowest, strict=True))
        )
        loops = [getattr(p, "_loop", None) for p in collector.probes]
        starts = [loop.starts for loop in loops if loop is not None]
        print(f"status loops: {len(starts)}, sessions opened for them: {sum(starts)}")
        for row in rows:
            if row.error:
                print(f"  {row.host}: {row.error}")
        for probe in collector.probes:
            steps = getattr(probe, "step_s", {})
            print(f"  {probe.name}: " + ", ".join(f"{k} {v:.2f}s" for k, v in steps.items()))
        probe = collector.probes[0]
        floor = []
        for _ in range(5):
            started = time.monotonic()
            await probe.deck.host.run(["true"])  # type: ignore[attr-defined]
            floor.append(time.monotonic() - started)
        print(
            f"floor: one `true` over an open SSH connection, median {statistics.median(floor):.2f} s"
        )
        await collector.close()
    finally:
        fleet.stop()
