"""The fleet's Markdown summary: a host table, a section per host; unknown is n/a, never 0.

The pure part is checked on hand-made rows (hostile text included); the pane's `E` key
and `fleet --markdown` on the demo fleet (light simulated boxes, real log files).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui.app.fleet_app import FleetApp
from tui.core.audit import read_audit
from tui.fleet.collector import FleetCollector
from tui.fleet.demo import DemoFleet
from tui.fleet.model import FleetRow
from tui.fleet.summary import fleet_markdown

REPO = Path(__file__).resolve().parents[2]
SECRET = "hf_abcdefghijklmnopqrstuvwxyz123456"


def _rows() -> list[FleetRow]:
    return [
        FleetRow(
            host="kimi",
            reachable=True,
            label="Kimi | INT4",
            route="root@10.0.0.5 via pve",
            unit_state="active",
            phase="weights",
            shards_done=12,
            shards_total=64,
            eta_s=600.0,
            health_ok=False,
            gpu_count=8,
            gpu_mem_used_bytes=200 * 1024**3,
            gpu_mem_total_bytes=768 * 1024**3,
            gpu_mem_used_pct_max=30.0,
            temp_c_max=61.0,
            power_w=900.0,
        ),
        FleetRow(
            host="glm",
            reachable=False,
            error=f"glm: cannot connect\nrefused token={SECRET}",
        ),
    ]


def test_table_then_sections_unknown_is_na_and_text_is_safe() -> None:
    text = fleet_markdown(_rows(), "lab", now_s=0)
    lines = text.splitlines()
    assert lines[0] == "# Fleet lab"
    assert "1/2 up: 1 loading, 1 unreachable | 8 GPUs" in lines[2]
    header = next(i for i, line in enumerate(lines) if line.startswith("| Host |"))
    table = lines[header : header + 4]
    columns = table[0].count("|")
    assert all(row.count("|") - row.count("\\|") == columns for row in table), table
    kimi = table[2]
    assert "kimi (Kimi \\| INT4)" in kimi and "weights 12/64, ready in ~10 min" in kimi
    assert "200/768 GiB (fullest 30 %)" in kimi and "| 61 C |" in kimi
    assert "| n/a |" in kimi  # no metrics known: not 0
    glm = table[3]
    assert "unreachable" in glm and glm.count("n/a") >= 10
    assert "## kimi" in lines and "## glm" in lines
    assert "- Route: root@10.0.0.5 via pve" in lines
    assert SECRET not in text and "- Error: glm: cannot connect refused" in text


@pytest.fixture
async def demo_collector() -> FleetCollector:
    fleet = DemoFleet(6)
    collector = FleetCollector(fleet.probes, host_timeout_s=10)
    try:
        yield collector  # type: ignore[misc]
    finally:
        await collector.close()
        fleet.close()


async def test_e_writes_the_fleet_summary_and_records_it(
    demo_collector: FleetCollector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = FleetApp(demo_collector, title="lab")
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(400):
            if app.refreshes:
                break
            await pilot.pause(0.05)
        await pilot.press("E")
        await pilot.pause(0.2)
        await pilot.press("E")  # again: a new file, or (same second) refused; never overwritten
        await pilot.pause(0.2)
    written = sorted(tmp_path.glob("summary-fleet-lab-*.md"))
    assert written, app.last_action
    text = written[0].read_text()
    assert text.startswith("# Fleet lab\n") and text.count("\n## box-") == 6
    events = [r for r in read_audit() if r["event"].startswith("summary.export")]
    assert events[0]["path"] == str(written[0]) and events[0]["hosts"] == 6
    second = events[1]
    if len(written) == 1:  # the same timestamped name: refused and recorded
        assert second["event"] == "summary.export_failed" and "already exists" in second["error"]
    else:
        assert second["event"] == "summary.export" and second["path"] == str(written[1])


def test_fleet_markdown_cli_on_the_demo() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui", "fleet", "--demo", "6", "--markdown"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 1, result.stderr  # the demo has an unreachable box
    lines = result.stdout.splitlines()
    assert lines[0] == "# Fleet demo"
    assert sum(line.startswith("| box-") for line in lines) == 6
    assert "Traceback" not in result.stderr
    json.dumps(result.stdout)  # plain text, nothing binary


def test_a_multi_node_deployment_has_its_section_degraded_naming_the_host() -> None:
    """Two hosts of one DP deployment (the head, a headless rank host that is lost) and a
    host alone: one Deployments section, the head and members named, degraded by node2."""
    rows = [
        FleetRow(host="node1", reachable=True, unit_state="active", health_ok=True, running=3,
                 waiting=0, gpu_count=8, deployment="kimi"),
        FleetRow(host="node2", reachable=False, unit_state="active", gpu_count=8,
                 deployment="kimi", headless=True),
        FleetRow(host="solo", reachable=True, unit_state="active", health_ok=True),
    ]  # fmt: skip
    lines = fleet_markdown(rows, "lab", now_s=0).splitlines()
    start = lines.index("## Deployments")
    section = lines[start : lines.index("## node1")]
    assert section[2].startswith("### kimi: degraded (node2 unreachable")
    assert "- Head: node1" in section
    members = next(line for line in section if line.startswith("- Members: "))
    assert "node1 (head, " in members and "node2 (headless ranks, unreachable)" in members
    assert "- GPUs: 16" in section and "solo" not in "\n".join(section)
    # a fleet without a deployment has no such section
    assert "## Deployments" not in fleet_markdown(rows[2:], "lab", now_s=0)
