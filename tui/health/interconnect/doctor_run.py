"""Run the interconnect doctor on a host (the simulator's box: `tui.sim.checks`)."""

from __future__ import annotations

from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.health.findings import INFO, Finding
from tui.health.interconnect.collect import collect_interconnect
from tui.health.interconnect.rules import InterconnectReport, analyze_interconnect
from tui.hosts.base import Host


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
