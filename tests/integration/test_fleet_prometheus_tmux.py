"""`servedeck fleet --prometheus URL` in a real terminal (tmux): the Fleet pane, not a listing.

On a terminal the command opens the pane over the Prometheus rows (piped, it prints them:
tests/integration/test_fleet_prometheus_faults.py); here the real command runs against a real
Prometheus scraping one dcgm-exporter-compatible box, mixed with two demo boxes, at 80x24.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.e2e_support import Tmux, wait_for
from tests.support.prometheus_fixtures import (
    PrometheusServer,
    ScrapeJob,
    prometheus_factory,  # noqa: F401 - a fixture
)
from tui.sim.dcgm import DcgmCollector, DcgmServer
from tui.sim.gpu_model import SimGpuModel

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.tmux
def test_fleet_prometheus_opens_the_pane_on_a_terminal(
    tmp_path: Path,
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    model = SimGpuModel(tmp_path / "box", seed=5)
    dcgm = DcgmServer(DcgmCollector(model.snapshot, "node-5"), 0, "127.0.0.5").start()
    tmux = Tmux(width=120, height=30)  # Age and Src both shown (at 80 Age gives way)
    env = {
        "PYTHONPATH": str(REPO),
        **{
            f"SERVEDECK_{name}_DIR": str(tmp_path / name.lower())
            for name in ("CONFIG", "DATA", "LOG")
        },
    }
    try:
        prom = prometheus_factory([ScrapeJob("dcgm", [(f"127.0.0.5:{dcgm.port}", {})])])
        # Prometheus's host mixed with two light demo boxes (the SSH fleet's rows).
        tmux.start(f"{sys.executable} -m tui fleet --prometheus {prom.url} --demo 2", env)
        screen = tmux.wait_screen(
            lambda s: "127.0.0.5" in s and "box-01" in s and "3/3 up" in s, 60, "the rows"
        )
        assert "Src" in screen and "Age" in screen and "demo" in screen, screen
        for key in ("/", "p", "r", "o", "m", "Enter"):  # filter by source, back to the table
            tmux.send(key)
        tmux.wait_screen(lambda s: "filter 'prom': 1 shown" in s, 20, "the prom row alone")
        tmux.wait_screen(lambda s: "GPU util max" in s or "no samples" in s, 60, "its history")
        tmux.send("Enter")  # no profile for a Prometheus-only host: the pane stays
        tmux.wait_screen(lambda s: "no profile for this host" in s, 20, "the refusal")
        tmux.send("q")
        wait_for(tmux.pane_dead, 30, "the fleet to exit on q")
    finally:
        tmux.close()
        dcgm.close()
