"""Read a host's GPU health once: counters from `nvidia-smi -q`, XIDs from the kernel log."""

from __future__ import annotations

import asyncio

from tui.core.errors import ServedeckError
from tui.health.counters import HealthCounters, parse_counters
from tui.health.interconnect.parse import norm_bdf, split_sections
from tui.health.report import HealthReport, build_report
from tui.health.xid.decode import XidEvent
from tui.health.xid.follow import journal_unreadable
from tui.health.xid.kernel_log import KernelLogFollower, dmesg_events
from tui.hosts.base import Host
from tui.hosts.reader import run_read

_SCRIPT = r"""
echo "@@servedeck:ids"; nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>&1
echo "@@servedeck:q"; nvidia-smi -q 2>&1
"""


def bus_map(ids_text: str) -> dict[str, int]:
    """`index, pci.bus_id` CSV rows to bus id -> GPU index."""
    found = {}
    for line in ids_text.splitlines():
        index, _, bus = (cell.strip() for cell in line.partition(","))
        if index.isdigit() and bus:
            found[norm_bdf(bus)] = int(index)
    return found


async def nvml_counters(host: Host) -> list[HealthCounters] | None:
    """NVML's counters (with NVLink errors) when the GPUs are on this machine; else None."""
    if not host.is_local:
        return None
    try:
        from tui.health.nvml_counters import read_nvml_counters

        return await asyncio.to_thread(read_nvml_counters) or None
    except (ImportError, OSError, ServedeckError):  # no nvidia-ml-py, no driver: nvidia-smi
        return None


async def read_counters(host: Host) -> tuple[list[HealthCounters], dict[str, int], str | None]:
    """(counters, bus id -> index, why there are none): NVML here, else `nvidia-smi -q`."""
    from_nvml = await nvml_counters(host)
    if from_nvml:
        return from_nvml, {c.bus_id: c.index for c in from_nvml}, None
    # The console re-reads these every few minutes: in the host's long-lived reader over SSH.
    result = await run_read(host, ["/bin/sh", "-c", _SCRIPT], timeout_s=30)
    sections = split_sections(result.stdout)
    buses = bus_map(sections.get("ids", ""))
    counters = parse_counters(sections.get("q", ""), buses)
    if not counters:
        first = (sections.get("ids", "").strip().splitlines() or ["nvidia-smi: not found"])[0]
        return [], buses, f"no GPU counters: {first[:160]}"
    return counters, buses, None


async def read_events(
    host: Host, buses: dict[str, int], journal_file: str | None = None
) -> tuple[list[XidEvent], str, str | None]:
    """(events, where from, a note): the journal first, dmesg when journalctl fails."""
    if journal_file is None:
        note = await journal_unreadable(host)
        if note is not None:
            try:
                return [e async for e in dmesg_events(host, buses)], "dmesg", None
            except (OSError, ServedeckError) as error:
                return [], "none", f"{note}; dmesg: {error}"
    follower = KernelLogFollower(host, journal_file=journal_file, follow=False)
    try:
        return [e async for e in follower.events(buses)], "journal", None
    except (OSError, ServedeckError) as error:
        journal_error = str(error)
    try:
        return [e async for e in dmesg_events(host, buses)], "dmesg", None
    except (OSError, ServedeckError) as error:
        return [], "none", f"kernel log unreadable: journal ({journal_error}); dmesg ({error})"


async def collect_health(host: Host, journal_file: str | None = None) -> HealthReport:
    """Counters and the XIDs logged this boot; a dead host is a note, never a traceback."""
    notes = []
    try:
        counters, buses, why = await read_counters(host)
    except ServedeckError as error:
        return build_report([], [], "none", [f"{host.label}: {error}"])
    if why:
        notes.append(why)
    events, source, note = await read_events(host, buses, journal_file)
    if note:
        notes.append(note)
    return build_report(counters, events, source, notes)


async def counters_report(host: Host, buses: dict[str, int]) -> HealthReport:
    """The counters alone; without them the GPUs of `buses` are still there for XIDs to land on."""
    try:
        counters, _, why = await read_counters(host)
    except ServedeckError as error:
        counters, why = [], str(error)
    counters = counters or [HealthCounters(i, b) for b, i in sorted(buses.items())]
    return build_report(counters, [], "journal", [why] if why else [])
