"""Hand-built GPU snapshots for view tests: the 8x RTX PRO 6000 Blackwell box of the story.

GPUs 0-3 on NUMA node 0 and 4-7 on node 1, PCIe Gen5, no NVLink; the first four
are loading a TP=4 model. Everything is deterministic (fixed clock), so SVG
snapshots are stable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from tui.gpu.history import GpuHistory, GpuTrend
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample, GpuStatic

GIB = 1024**3
MIB = 1024**2
NOW_S = 1_760_000_000.0
RTX_PRO_6000_TOTAL_BYTES = 97887 * MIB
RTX_PRO_6000_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def _statics(count: int) -> tuple[GpuStatic, ...]:
    return tuple(
        GpuStatic(
            index=i,
            name=RTX_PRO_6000_NAME,
            uuid=f"GPU-6000{i:04d}-0000-0000-0000-000000000000",
            bus_id=f"00000000:{0x01 + 0x20 * i:02X}:00.0",
            memory_total_bytes=RTX_PRO_6000_TOTAL_BYTES,
            compute_capability="12.0",
            numa_node=0 if i < count // 2 else 1,
            pcie_max_gen=5,
            pcie_max_width=16,
            power_limit_w=600.0,
            cpu_affinity="0-31,64-95" if i < count // 2 else "32-63,96-127",
        )
        for i in range(count)
    )


def _topology(count: int) -> tuple[tuple[str, ...], ...]:
    half = count // 2
    return tuple(
        tuple(
            "X" if i == j else "NODE" if (i < half) == (j < half) else "SYS" for j in range(count)
        )
        for i in range(count)
    )


def _sample(i: int, used_bytes: int, t_s: float, loaded: bool) -> GpuSample:
    processes = ()
    if loaded:
        processes = (
            GpuProcessUsage(
                pid=51230 + i,
                gpu_index=i,
                used_memory_bytes=used_bytes - 600 * MIB,
                process_name=f"VLLM::Worker_TP{i}",
                user="vllm",
                started_at_s=t_s - 1234,
            ),
            GpuProcessUsage(
                pid=51200,
                gpu_index=i,
                used_memory_bytes=600 * MIB,
                process_name="/opt/vllm/.venv/bin/python3 -m vllm.entrypoints.openai.api_server",
                user="vllm",
                started_at_s=t_s - 1300,
            ),
        )
    return GpuSample(
        index=i,
        memory_used_bytes=used_bytes,
        memory_total_bytes=RTX_PRO_6000_TOTAL_BYTES,
        utilization_gpu_pct=(88.0 + i) if loaded else 0.0,
        utilization_memory_pct=(35.0 + i) if loaded else 0.0,
        temperature_c=(61.0 + i) if loaded else (31.0 + i),
        power_w=(412.5 + 7 * i) if loaded else 23.0 + i,
        power_limit_w=600.0,
        sm_clock_mhz=2617 if loaded else 180,
        memory_clock_mhz=14001,
        pcie_gen=5 if loaded else 1,
        pcie_width=16,
        pcie_tx_bytes_per_s=(2.4e9 + i * 1e8) if loaded else 1.2e5,
        pcie_rx_bytes_per_s=(9.1e8 + i * 1e7) if loaded else 3.0e4,
        ecc_uncorrected_errors=0,
        processes=processes,
    )


def rtx_pro_6000_box(
    t_s: float = NOW_S, loaded_gib: float = 61.0, lost: tuple[int, ...] = (), count: int = 8
) -> GpuBoxSnapshot:
    """The box half-loaded: GPUs 0..count/2-1 hold about loaded_gib each."""
    samples = []
    for i in range(count):
        loaded = i < count // 2
        used = int((loaded_gib + 0.25 * i) * GIB) if loaded else 512 * MIB
        sample = _sample(i, used, t_s, loaded)
        if i in lost:
            sample = GpuSample(index=i, lost=True, error="GPU is lost (fell off the bus)")
        samples.append(sample)
    return GpuBoxSnapshot(
        source="nvml",
        taken_at_s=t_s,
        statics=_statics(count),
        samples=tuple(samples),
        driver_version="580.65.06",
        cuda_version="13.0",
        topology=_topology(count),
    )


def loading_history(
    seconds: int = 120, lost: tuple[int, ...] = (), count: int = 8
) -> tuple[GpuBoxSnapshot, Mapping[int, GpuTrend]]:
    """A box whose loaded GPUs gained 0.4 GiB/s for `seconds`; the last snapshot and trends."""
    history = GpuHistory(target_fraction=0.9)
    snapshot = rtx_pro_6000_box()
    for step in range(seconds + 1):
        t_s = NOW_S - seconds + step
        snapshot = rtx_pro_6000_box(t_s=t_s, loaded_gib=14.0 + 0.4 * step, lost=lost, count=count)
        history.add(snapshot)
    return snapshot, history.trends()


def no_driver_box() -> GpuBoxSnapshot:
    return GpuBoxSnapshot(
        source="nvml",
        taken_at_s=NOW_S,
        available=False,
        error="no NVIDIA driver (NVML library not found)",
    )


def with_memory(snapshot: GpuBoxSnapshot, index: int, used_bytes: int) -> GpuBoxSnapshot:
    samples = tuple(
        dataclasses.replace(s, memory_used_bytes=used_bytes) if s.index == index else s
        for s in snapshot.samples
    )
    return dataclasses.replace(snapshot, samples=samples)


def busy_tick(snapshot: GpuBoxSnapshot, tick: int) -> GpuBoxSnapshot:
    """GPU 1 at a new utilization and power: what a busy box changes each second."""
    samples = tuple(
        dataclasses.replace(s, utilization_gpu_pct=50.0 + tick, power_w=300.0 + tick)
        if s.index == 1
        else s
        for s in snapshot.samples
    )
    return dataclasses.replace(snapshot, samples=samples, taken_at_s=snapshot.taken_at_s + tick)
