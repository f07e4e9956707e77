"""What the Host overview shows for the simulator: the seed deployment's machine."""

from __future__ import annotations

import time

from tui.gpu.model import GpuBoxSnapshot
from tui.hostfacts.hostinfo import HostOverview

_BOOTED_AT_S = time.time() - 9 * 86400 - 4 * 3600


def simulated_overview(snapshot: GpuBoxSnapshot) -> HostOverview:
    """An EPYC box with ~516 GB RAM, 2 NUMA nodes and the simulated GPUs."""
    return HostOverview(
        hostname="sim-gpu-box",
        os_name="Ubuntu 24.04.2 LTS (simulated)",
        kernel="6.8.12-4-pve",
        arch="x86_64",
        cpu_model="AMD EPYC 9554 64-Core Processor",
        cpu_cores=128,
        numa_nodes=2,
        mem_total_bytes=516 * 1024**3,
        mem_available_bytes=402 * 1024**3,
        uptime_s=time.time() - _BOOTED_AT_S,
        loadavg="2.41 2.30 2.12",
        gpu_names=tuple(static.name for static in snapshot.statics),
        driver_version=snapshot.driver_version,
        gpu_error=None if snapshot.statics else "no simulated GPUs",
        simulated=True,
    )
