"""Run the interconnect doctor on a real host or on the simulator's box."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.health.findings import INFO, Finding
from tui.health.interconnect import InterconnectReport, analyze_interconnect
from tui.health.interconnect_collect import collect_interconnect
from tui.health.interconnect_parse import split_sections
from tui.hosts.base import Host

if TYPE_CHECKING:
    from tui.sim.box import SimBox

_LOG_PATTERN = re.compile(
    r"Custom allreduce is disabled|NCCL INFO .*via |NCCL INFO .*(P2P|SHM|NET)/"
)


async def run_interconnect(host: Host, profile: Profile | None) -> InterconnectReport:
    """Read-only checks over the Host; an unreachable host is one finding, not a traceback."""
    try:
        sections, elapsed_s = await collect_interconnect(host, profile)
    except ServedeckError as error:
        where = profile.host.route if profile is not None else host.label
        return InterconnectReport(
            findings=(Finding("host", INFO, None, f"{where}: {error}", "check the connection"),),
            notes=(f"could not read the host: {error}",),
        )
    return analyze_interconnect(sections, elapsed_s)


def _log_lines(path: Path, limit: int = 40) -> list[str]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if _LOG_PATTERN.search(line)][-limit:]


async def run_demo_interconnect(box: SimBox) -> InterconnectReport:
    """The simulated box: its GPUs' load and log, faults from SERVEDECK_SIM_INTERCONNECT."""
    from tui.sim.interconnect import faults_from_env, render_sections

    started_s = time.monotonic()
    snapshot = await asyncio.to_thread(box.snapshot)
    utilization = [sample.utilization_gpu_pct or 0.0 for sample in snapshot.samples]
    log = _log_lines(box.log_path)
    text = render_sections(faults_from_env(), utilization, log, gpu_count=len(utilization) or 8)
    return analyze_interconnect(split_sections(text), time.monotonic() - started_s)
