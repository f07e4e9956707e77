"""The fleet row shows the engine's verdict: from the SSH collector's own judge, and from a
real Prometheus scraping the servedeck exporter's `servedeck_engine_progress`.

A simulated box streams a long request; its worker rank 1 is SIGSTOPped (a real process):
the row turns `stalled` (the state word, the Progress cell, an alert), and back after
SIGCONT. Before the server serves, the verdict is unknown: n/a, never `idle`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx

from tests.integration.test_progress_sim import OPTIONS
from tests.support.prometheus_fixtures import (
    ExporterThread,
    FleetBox,
    PrometheusServer,
    prometheus_factory,  # noqa: F401 - a fixture
    scrape_jobs,
    wait_for,
)
from tests.support.summary_helpers import demo_deck
from tui.core.config import demo_profile
from tui.fleet.deck_probe import DeckProbe
from tui.fleet.model import FleetRow
from tui.fleet.prom_query import PromFleetConfig
from tui.fleet.prometheus import PrometheusFleet
from tui.fleet.view import host_state
from tui.sim.box import SimBox
from tui.sim.dcgm import DcgmCollector, DcgmServer
from widgets.fleet_table import progress_cell

N_S = 4.0
BODY = {"model": "kimi-k2.5-int4", "prompt": "hi", "max_tokens": 4000, "stream": True}


def _profile():  # type: ignore[no-untyped-def]
    base = demo_profile()
    return replace(base, service=replace(base.service, stall_after_s=N_S))


async def test_the_ssh_collectors_row_judges_the_engine(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory(OPTIONS, load_seconds=1.5, gpu_count=4)
    box.start()
    probe = DeckProbe(demo_deck(box, _profile()))
    try:
        first = await probe.poll()  # still loading or just up: not judged, or unknown
        assert first.progress in (None, "unknown"), first
        assert progress_cell(first) in ("n/a", "[dim]unknown[/]")
        assert box.wait_until_ready(60)

        async def until(check: Callable[[FleetRow], bool], what: str, timeout_s: float) -> FleetRow:
            start = time.monotonic()
            while True:
                row = await probe.poll()
                if check(row):
                    return row
                assert time.monotonic() - start < timeout_s, (what, row)
                await asyncio.sleep(0.5)

        await until(lambda r: r.progress == "idle", "idle", 30)
        async with httpx.AsyncClient(base_url=box.base_url, timeout=120) as client:
            async with client.stream("POST", "/v1/completions", json=BODY):
                await until(lambda r: r.progress == "serving", "serving", 30)
                await client.post("/_sim/fault", json={"stop_rank": 1})
                started = time.monotonic()
                row = await until(lambda r: r.progress == "stalled", "stalled", N_S + 10)
                print(f"\nfleet row: stalled {time.monotonic() - started:.1f} s after SIGSTOP")
                assert host_state(row) == "stalled"
                assert row.progress_kind == "a rank stopped"
                assert "stalled: a rank stopped" in row.alerts
                assert row.to_json()["progress"] == "stalled"
                await client.post("/_sim/fault", json={"stop_rank": None})
                row = await until(lambda r: r.progress == "serving", "serving again", 20)
                assert host_state(row) == "serving" and not row.alerts
    finally:
        await probe.close()


def test_the_prometheus_row_reads_servedeck_engine_progress(
    sim_box_factory: Callable[..., SimBox],
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
    tmp_path: Path,
) -> None:
    box = sim_box_factory(OPTIONS, load_seconds=1.5, gpu_count=4)
    box.start()
    dcgm = DcgmServer(DcgmCollector(box.snapshot, "box0")).start()
    exporter = ExporterThread(box, "box0", _profile()).start()
    fleet_box = FleetBox("box0", box, dcgm, exporter)
    try:
        assert box.wait_until_ready(60)
        prom = prometheus_factory(scrape_jobs([fleet_box]))
        config = PromFleetConfig(url=prom.url, host_label="host")

        def row() -> FleetRow | None:
            async def read() -> list[FleetRow]:
                fleet = PrometheusFleet(config)
                try:
                    return list(await fleet.refresh())
                finally:
                    await fleet.aclose()

            rows = {r.host: r for r in asyncio.run(read())}
            return rows.get("box0")

        wait_for(lambda: (r := row()) is not None and r.progress == "idle", 60, "idle")
        with httpx.Client(base_url=box.base_url, timeout=120) as client:
            with client.stream("POST", "/v1/completions", json=BODY):
                wait_for(
                    lambda: (r := row()) is not None and r.progress == "serving", 30, "serving"
                )
                client.post("/_sim/fault", json={"stop_rank": 1})
                wait_for(
                    lambda: (r := row()) is not None and r.progress == "stalled",
                    N_S + 20,
                    "stalled",
                )
                stalled = row()
                assert stalled is not None and host_state(stalled) == "stalled"
                assert stalled.progress_kind is None  # the series has no kind: not guessed
                client.post("/_sim/fault", json={"stop_rank": None})
                wait_for(lambda: (r := row()) is not None and r.progress == "serving", 30, "again")
    finally:
        fleet_box.close()
