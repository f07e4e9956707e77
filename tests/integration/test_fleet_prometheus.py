"""The Prometheus fleet against a real Prometheus scraping simulated boxes.

Two simulated boxes (vLLM /metrics from the simulator's server, a dcgm-exporter-compatible
/metrics of its GPUs, a servedeck exporter each) and two dcgm-only boxes on their own
loopback addresses are scraped every second by /usr/bin/prometheus; `servedeck fleet
--prometheus URL --json` must agree with the simulators, show a box whose scrape fails as
stale (never as zeros), and recover after Prometheus itself restarts.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.prometheus_fixtures import (
    FleetBox,
    PrometheusServer,
    prometheus_factory,  # noqa: F401 - a fixture
    scrape_jobs,
    start_fleet_box,
    wait_for,
)
from tests.support.sim_fixtures import FAST_OPTIONS, SIM_LOAD_SECONDS
from tui.fleet.model import JSON_KEYS
from tui.fleet.prom_query import PromFleetConfig
from tui.fleet.prometheus import PrometheusFleet
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.dcgm import MIB, DcgmCollector, DcgmServer
from tui.sim.gpu_model import SimGpuModel

OPTIONS = SimServerOptions(
    shards=FAST_OPTIONS.shards,
    tp=2,
    decode_step_s=FAST_OPTIONS.decode_step_s,
    decode_alpha=FAST_OPTIONS.decode_alpha,
    log_interval_s=1.0,
)


def fleet_json(url: str, *extra: str) -> list[dict[str, object]]:
    """`servedeck fleet --prometheus URL --json`, the real command in a subprocess."""
    done = subprocess.run(
        [sys.executable, "-m", "tui", "fleet", "--prometheus", url, "--json", *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def by_host(rows: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {str(row["host"]): row for row in rows}


def gpu_truth(box: SimBox) -> tuple[int, int, int]:
    """(GPU count, used bytes, used+free bytes) as dcgm-exporter's MiB figures give them."""
    snap = box.snapshot()
    used = sum((s.memory_used_bytes or 0) // MIB for s in snap.samples) * MIB
    free = sum(
        ((s.memory_total_bytes or 0) - (s.memory_used_bytes or 0)) // MIB for s in snap.samples
    )
    return len(snap.samples), used, used + free * MIB


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[list[FleetBox]]:
    boxes: list[FleetBox] = []
    try:
        for index in range(2):
            box = SimBox(
                tmp_path / f"box{index}", seed=index, load_seconds=SIM_LOAD_SECONDS, options=OPTIONS
            )
            boxes.append(start_fleet_box(f"box{index}", box))
        for fleet_box in boxes:
            assert fleet_box.box.wait_until_active(timeout_s=120) == "active"
        yield boxes
    finally:
        for fleet_box in boxes:
            fleet_box.close()


@pytest.fixture
def idle_dcgm_boxes(tmp_path: Path) -> Iterator[list[DcgmServer]]:
    """Two light boxes (no service: idle GPUs) on 127.0.0.2 and 127.0.0.3, dcgm-exporter only."""
    servers = []
    for index, address in enumerate(("127.0.0.2", "127.0.0.3")):
        model = SimGpuModel(tmp_path / f"idle{index}", seed=10 + index)
        collector = DcgmCollector(model.snapshot, f"idle{index}")
        servers.append(DcgmServer(collector, 0, address).start())
    yield servers
    for server in servers:
        server.close()


def test_fleet_json_agrees_with_the_simulators_then_stale_then_prometheus_restart(
    fleet: list[FleetBox],
    idle_dcgm_boxes: list[DcgmServer],
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    idle_targets = [f"{s.httpd.server_address[0]}:{s.port}" for s in idle_dcgm_boxes]
    prom = prometheus_factory(scrape_jobs(fleet, {"dcgm-idle": idle_targets}))

    def settled() -> dict[str, dict[str, object]] | None:
        rows = by_host(fleet_json(prom.url, "--host-label", "host"))
        for name in ("box0", "box1"):
            row = rows.get(name)
            if not row or row["phase"] != "serving" or row["gpu_count"] is None:
                return None
            if row["running"] is None or row["gen_tok_s"] is None:
                return None
        return rows

    wait_for(settled, 90, "both boxes in the fleet JSON")
    # Then a few requests to box0 only (after Prometheus has its counters at rest, so the
    # rate sees them): its TTFT quantiles appear, box1's stay unknown.
    for _ in range(3):
        body = {"model": "kimi-k2.5-int4", "prompt": "hello fleet", "max_tokens": 4}
        answer = httpx.post(f"{fleet[0].box.base_url}/v1/completions", json=body, timeout=30)
        assert answer.status_code == 200, answer.text

    def with_ttft() -> dict[str, dict[str, object]] | None:
        rows = settled()
        if not rows or rows["box0"]["ttft_p50_s"] is None:
            return None
        # A scrape taken while a request was in flight says running=1; wait for one at rest.
        idle = all(
            rows[name]["running"] == 0 and rows[name]["waiting"] == 0
            for name in rows
            if name.startswith("box")
        )
        return rows if idle else None

    rows = wait_for(with_ttft, 60, "box0's TTFT from its histogram, both boxes idle")
    assert isinstance(rows, dict)
    assert 0 < float(rows["box0"]["ttft_p50_s"]) <= float(rows["box0"]["ttft_p99_s"]) < 10  # type: ignore[arg-type]
    assert rows["box1"]["ttft_p50_s"] is None  # no traffic: unknown, not 0 s
    for fleet_box in fleet:
        row = rows[fleet_box.name]
        assert list(row)[: len(JSON_KEYS)] == list(JSON_KEYS)
        assert row["source"] == "prometheus"
        count, used, total = gpu_truth(fleet_box.box)
        assert row["gpu_count"] == count == 8
        assert row["gpu_mem_used_bytes"] == used > 0  # tp=2: two GPUs hold the model
        assert row["gpu_mem_total_bytes"] == total
        assert row["reachable"] is True
        assert row["unit_state"] == "active"
        assert row["health_ok"] is True
        assert row["shards_done"] == row["shards_total"] == OPTIONS.shards
        assert row["running"] == 0 and row["waiting"] == 0  # idle: a real 0, not n/a
        # What the box's exporter counted (other processes on this shared machine can match
        # the service's patterns, so the count is the exporter's, carried through Prometheus).
        assert row["leftovers"] == fleet_box.exporter.runner.view().leftovers is not None
        assert row["error"] is None
        assert 0 <= float(row["sample_age_s"]) < 15  # type: ignore[arg-type]

    # One box's dcgm and servedeck exporters die: stale, with the scrape age, never zeros.
    victim = fleet[1]
    victim.kill_exporters()

    def stale() -> dict[str, object] | None:
        row = by_host(fleet_json(prom.url, "--host-label", "host")).get("box1")
        gone = row and row["gpu_count"] is None and row["unit_state"] is None
        return row if gone and row["error"] and "servedeck" in str(row["error"]) else None

    row = wait_for(stale, 60, "box1 shown as stale")
    assert isinstance(row, dict)
    assert "stale" in str(row["error"]) and "dcgm" in str(row["error"])
    for key in ("gpu_mem_used_bytes", "gpu_util_pct_max", "unit_state", "phase", "leftovers"):
        assert row[key] is None, key
    assert row["running"] == 0  # the vLLM target still answers
    assert row["reachable"] is True
    alive = by_host(fleet_json(prom.url, "--host-label", "host"))["box0"]
    assert alive["gpu_count"] == 8 and alive["error"] is None

    # The default host label, `instance` with its port stripped, tells the idle boxes apart.
    rows = by_host(fleet_json(prom.url))
    for index, address in enumerate(("127.0.0.2", "127.0.0.3")):
        idle = rows[address]
        assert idle["gpu_count"] == 8
        assert idle["gpu_mem_used_bytes"] == 0  # idle GPUs: a true 0
        assert idle["gpu_util_pct_max"] == 0
        assert idle["unit_state"] is None  # no servedeck exporter there: unknown
        del index

    # Prometheus restarted mid-run: the source reports it, keeps its hosts, then recovers.
    source = PrometheusFleet(PromFleetConfig(prom.url, host_label="host"))

    refreshes = []

    async def refresh() -> list[dict[str, object]]:
        refreshes.append(1)
        return [row.to_json() for row in await source.refresh()]

    loop = asyncio.new_event_loop()
    try:
        before = by_host(loop.run_until_complete(refresh()))
        assert before["box0"]["gpu_count"] == 8
        prom.stop()
        during = by_host(loop.run_until_complete(refresh()))
        assert set(during) == set(before)
        assert during["box0"]["reachable"] is False
        assert "prometheus" in str(during["box0"]["error"])
        assert during["box0"]["gpu_count"] is None
        prom.start()

        def recovered() -> bool:
            row = by_host(loop.run_until_complete(refresh()))["box0"]
            return row["reachable"] is True and row["gpu_count"] == 8

        wait_for(recovered, 60, "fleet recovered after the Prometheus restart")
        assert source.queries_sent == len(refreshes)  # one query per refresh, any fleet size
    finally:
        loop.run_until_complete(source.aclose())
        loop.close()


def test_simulated_dcgm_exporter_speaks_dcgm_names_and_units(tmp_path: Path) -> None:
    model = SimGpuModel(tmp_path / "box", seed=3)
    server = DcgmServer(DcgmCollector(model.snapshot, "gpu-node-7")).start()
    try:
        text = httpx.get(server.url, timeout=5).text
    finally:
        server.close()
    assert "# HELP DCGM_FI_DEV_FB_USED Frame buffer memory used (in MiB)." in text
    assert "# TYPE DCGM_FI_DEV_GPU_TEMP gauge" in text
    for name in ("FB_FREE", "GPU_UTIL", "POWER_USAGE", "XID_ERRORS", "SM_CLOCK"):
        assert f"DCGM_FI_DEV_{name}{{" in text
    line = next(
        ln for ln in text.splitlines() if ln.startswith("DCGM_FI_DEV_FB_FREE{") and 'gpu="0"' in ln
    )
    for label in ('UUID="GPU-', 'device="nvidia0"', 'Hostname="gpu-node-7"', "modelName="):
        assert label in line
    free_mib = float(line.rsplit(" ", 1)[1])
    assert free_mib == 97_887  # an idle 96 GB board, in MiB as dcgm-exporter writes it
