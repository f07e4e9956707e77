"""Render screenshots/fleet-deployment.svg: the Fleet's row of a multi-node DP deployment.

Two light simulated boxes, each behind its own real OpenSSH server on 127.0.0.1 (the
second through a jump host), are the head and the headless rank host of one deployment
(`[deployment] name = "kimi"`, `headless = true`); the head's server is a real simulated
vLLM. The fleet reads both over SSH and draws one group row over its members, as in
tests/integration/test_fleet_deployment.py (whose fixtures this reuses).
Run from the repository root: `python screenshots/render_fleet_deployment.py`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fleet_fixtures import (  # noqa: E402
    FLEET_HOST_TIMEOUT_S,
    SshdFleet,
    running_fleet,
    write_deployment,
)
from tests.support.sim_fixtures import FAST_OPTIONS, ready_box  # noqa: E402
from tests.support.sshd_fixtures import running_sshd_pair  # noqa: E402
from tui.app.fleet_app import FleetApp  # noqa: E402
from tui.fleet.collector import FleetCollector, probes_for  # noqa: E402
from tui.fleet.groups import load_group  # noqa: E402

OUT = ROOT / "screenshots"
SIZE = (120, 36)


async def render(fleet: SshdFleet, folder: Path) -> str:
    group = load_group(str(write_deployment(fleet, folder)))
    collector = FleetCollector(probes_for(group.members), host_timeout_s=FLEET_HOST_TIMEOUT_S)
    app = FleetApp(collector)
    try:
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(600):
                if app.refreshes >= 2 and len(app.visible_rows()) == 3:
                    break
                await pilot.pause(0.1)
            else:
                raise SystemExit("render_fleet_deployment: the fleet never showed its 3 rows")
            await pilot.pause(0.5)
            return app.save_screenshot(filename="fleet-deployment.svg", path=str(OUT))
    finally:
        await collector.close()


if __name__ == "__main__":
    scratch = Path(tempfile.mkdtemp(prefix="servedeck-screens-"))
    for name in ("CONFIG", "DATA", "LOG"):
        os.environ[f"SERVEDECK_{name}_DIR"] = str(scratch / name.lower())
    os.chdir(scratch)  # the group's member profiles are found from here
    with (
        running_sshd_pair() as pair,
        ready_box(scratch / "box", FAST_OPTIONS, seed=7) as box,
        running_fleet(pair, box.base_url, scratch / "fleet", ("serving", "serving")) as fleet,
    ):
        fleet.hosts[1].base_url = "http://127.0.0.1:9"  # the rank host runs no API server
        print(asyncio.run(render(fleet, scratch)))
