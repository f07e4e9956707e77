"""The simulated box's interconnect and health checks, read by the real parsers.

The box writes what a real host's tools would print (nvidia-smi's sections, kernel
XID lines); the health package's parsers and analysis judge it, so the demo shows
exactly what the same faults would show on a real host. `SimDeck` answers with these.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

from tui.health.counters import parse_counters
from tui.health.health_run import bus_map
from tui.health.interconnect.parse import split_sections
from tui.health.interconnect.rules import InterconnectReport, analyze_interconnect
from tui.health.report import HealthReport, build_report
from tui.health.xid.decode import decode_xid
from tui.sim.box import SimBox
from tui.sim.health import bad_xid_entries, query_text, xid_line, xids_from_env
from tui.sim.interconnect import faults_from_env, render_sections

_LOG_PATTERN = re.compile(
    r"Custom allreduce is disabled|NCCL INFO .*via |NCCL INFO .*(P2P|SHM|NET)/"
)


def _log_lines(path: Path, limit: int = 40) -> list[str]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if _LOG_PATTERN.search(line)][-limit:]


async def run_demo_interconnect(box: SimBox) -> InterconnectReport:
    """The simulated box: its GPUs' load and log, faults from SERVEDECK_SIM_INTERCONNECT."""
    started_s = time.monotonic()
    snapshot = await asyncio.to_thread(box.snapshot)
    utilization = [sample.utilization_gpu_pct or 0.0 for sample in snapshot.samples]
    log = _log_lines(box.log_path)
    text = render_sections(faults_from_env(), utilization, log, gpu_count=len(utilization) or 8)
    return analyze_interconnect(split_sections(text), time.monotonic() - started_s)


async def collect_demo_health() -> HealthReport:
    """The simulated box: events from SERVEDECK_SIM_XID through the real decoder; the
    entries it could not read are named in a note, not dropped unsaid."""
    xids = xids_from_env()
    ids, q = query_text(xids)
    buses = bus_map(ids)
    events = [e for x, g in xids if (e := decode_xid(xid_line(x, g), buses)) is not None]
    bad = bad_xid_entries()
    return build_report(parse_counters(q, buses), events, "simulated", [bad] if bad else [])
