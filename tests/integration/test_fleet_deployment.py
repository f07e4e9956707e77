"""A multi-node DP deployment in the fleet, over real sshd: one group row, members beneath.

Two light simulated boxes, each behind its own real OpenSSH server on 127.0.0.1 (the
second through a jump host), are the head and the `--headless` rank host of one
deployment (`[deployment] name`, `headless` in their profiles). The fleet shows one group
row counting both hosts' GPUs; with the rank host's sshd stopped the deployment is
degraded, naming the host, while the head alone still looks serving.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.fleet_fixtures import FLEET_HOST_TIMEOUT_S, running_fleet, write_deployment
from tests.support.screen_text import screen_text
from tests.support.sshd_fixtures import SshdPair
from tui.app.fleet_app import FleetApp
from tui.fleet.collector import FleetCollector, probes_for
from tui.fleet.deployments import grouped
from tui.fleet.groups import load_group
from tui.fleet.view import host_state
from tui.sim.box import SimBox

pytestmark = pytest.mark.sshd


async def test_a_deployment_is_one_group_row_and_a_lost_rank_host_degrades_it(
    sshd_pair: SshdPair, serving_box: SimBox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the group's member profiles are found from here
    kinds = ("serving", "serving")
    with running_fleet(sshd_pair, serving_box.base_url, tmp_path / "fleet", kinds) as fleet:
        group = load_group(str(write_deployment(fleet, tmp_path)))
        collector = FleetCollector(probes_for(group.members), host_timeout_s=FLEET_HOST_TIMEOUT_S)
        try:
            rows = await collector.refresh()
            rows = await collector.refresh()
            # Under load a member's GPUs may come a refresh later (its count is unknown till
            # then, and so is the deployment's: tests/core/test_fleet_deployments.py).
            deadline = time.monotonic() + 60
            while any(r.gpu_count is None for r in rows) and time.monotonic() < deadline:
                rows = await collector.refresh()
            assert [(r.host, r.deployment, r.headless) for r in rows] == [
                ("host0", "kimi", False),
                ("host1", "kimi", True),
            ]
            assert all(r.reachable for r in rows), [r.error for r in rows]
            shown = grouped(rows, rows)
            assert [r.host for r in shown] == ["deployment:kimi", "host0", "host1"]
            deployment = shown[0]
            assert deployment.members == ("host0", "host1")
            assert deployment.gpu_count == 16  # the headless host's 8 GPUs counted
            assert deployment.members_down == () and host_state(deployment) == "serving"
            assert deployment.to_json()["deployment"] == "kimi"

            app = FleetApp(collector)
            async with app.run_test(size=(200, 40)) as pilot:
                for _ in range(400):
                    if app.refreshes and app.visible_rows():
                        break
                    await pilot.pause(0.05)
                await pilot.pause(0.2)
                assert [r.host for r in app.visible_rows()][:3] == [
                    "deployment:kimi",
                    "host0",
                    "host1",
                ]
                text = screen_text(app)
                assert "deployment kimi: 2 hosts" in text
                assert "└ host0 moonshotai/Kimi-K2.5" in text
                assert "└ host1 headless" in text
                # Enter on the group row leaves for the head's console.
                await pilot.press("enter")
                await pilot.pause(0.2)
            assert app.return_value == "host0"

            fleet.hosts[1].server.stop()
            collector.host_timeout_s = 10.0
            rows = await collector.refresh()
            deployment = grouped(rows, rows)[0]
            assert host_state(rows[0]) == "serving"  # the head alone looks fine
            assert host_state(deployment) == "degraded"
            assert deployment.members_down == ("host1 unreachable",)
            assert "degraded: host1 unreachable" in deployment.alerts
        finally:
            await collector.close()
