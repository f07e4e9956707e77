"""The summary's Hardware health section: findings with their fix, GPU badges, the last probe."""

from __future__ import annotations

import json
from pathlib import Path

from markdown_it import MarkdownIt

from tests.support.summary_helpers import table_shapes
from tui.health.interconnect.parse import split_sections
from tui.health.interconnect.rules import analyze_interconnect
from tui.ops.hardware_health import HardwareHealth, last_probe
from tui.sim.checks import collect_demo_health
from tui.sim.interconnect import faults_from_text, render_sections
from tui.summary.hardware_section import hardware_health_markdown


def test_last_probe_is_the_newest_for_the_host(tmp_path: Path) -> None:
    history = tmp_path / "probe-history.jsonl"
    records = [
        {"host": "gpu-box", "verdict": "old"},
        {"host": "other", "verdict": "other host"},
        {"host": "gpu-box", "verdict": "new"},
    ]
    history.write_text("\n".join(json.dumps(r) for r in records) + '\n{"host": "gpu-box", "ver')
    assert last_probe("gpu-box", history) == records[2]
    assert last_probe("nobody", history) is None
    assert last_probe("gpu-box", tmp_path / "missing.jsonl") is None


async def test_section_with_faults_xids_and_a_probe(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SERVEDECK_SIM_XID", "79@5")
    text = render_sections(faults_from_text("acs=2,bar1=3"), [90.0] * 8)
    probe = {
        "verdict": "all-reduce busbw 22.0 GB/s: 41% below the pcie_gen5_x16 reference",
        "allreduce": [
            {"bytes": 8, "time_us": 30.1, "algbw_gbps": 0.0003, "busbw_gbps": 0.0005},
            {"bytes": 1024**3, "time_us": 85000.0, "algbw_gbps": 12.6, "busbw_gbps": 22.0},
        ],
    }
    hh = HardwareHealth(
        analyze_interconnect(split_sections(text)), await collect_demo_health(), probe
    )
    markdown = "\n".join(hardware_health_markdown(hh))
    assert "| crit | acs | GPU2 | 0000:40:01.1 (above GPU2) ACSCtl:" in markdown
    assert "| warn | bar1 | GPU3 | 0000:61:00.0 BAR1 Total : 256 MiB" in markdown
    assert "| GPU5 | 0000:a1:00.0 | crit | 79 (GPU has fallen off the bus) |" in markdown
    assert "Verdict: all-reduce busbw 22.0 GB/s: 41% below" in markdown
    assert "| 1073741824 | 85000.0 | 12.6 | 22.0 |" in markdown
    shapes = table_shapes(markdown)
    assert len(shapes) == 3 and all(all(c == h for c in rows) for h, rows in shapes)
    assert MarkdownIt().parse(markdown)
    assert hardware_health_markdown(None) == []


async def test_nvlink_error_counters_reach_the_summary() -> None:
    """NVML's NVLink counters are a column; a GPU that does not report them says n/a."""
    from dataclasses import replace

    from tui.health.counters import HealthCounters

    health = await collect_demo_health()
    first, second, *rest = health.gpus
    counted = HealthCounters(
        index=0, bus_id=first.bus_id, nvlink_replay_errors=3, nvlink_crc_flit_errors=2
    )
    health = replace(health, gpus=(replace(first, counters=counted), second, *rest))
    markdown = "\n".join(hardware_health_markdown(HardwareHealth(None, health)))
    header = next(line for line in markdown.splitlines() if line.startswith("| GPU | bus"))
    assert "| NVLink errors |" in header
    rows = [line for line in markdown.splitlines() if line.startswith("| GPU")]
    assert rows[1].split(" | ")[7] == "5"  # 3 replays + 2 CRC flits
    assert rows[2].split(" | ")[7] == "n/a"
