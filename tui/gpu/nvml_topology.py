"""The GPUs' interconnect through NVML: each GPU's active NVLinks and the topology matrix
between GPUs, as `nvidia-smi topo -m` prints it (read once when NvmlGpuSource opens)."""

from __future__ import annotations

from typing import Any

import pynvml

from tui.gpu.nvml_calls import TOPOLOGY_LABELS, _call_quiet, _text, sysfs_bus_id


def active_nvlinks(handle: Any) -> tuple[int, list[str]]:
    """Active NVLink count and the remote bus id of each active link."""
    remotes: list[str] = []
    for link in range(pynvml.NVML_NVLINK_MAX_LINKS):
        state = _call_quiet(pynvml.nvmlDeviceGetNvLinkState, handle, link)
        if state is None:
            if link == 0:
                break  # no NVLink on this GPU
            continue
        if state:
            remote = _call_quiet(pynvml.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
            remotes.append(sysfs_bus_id(_text(remote.busId)) if remote is not None else "")
    return len(remotes), remotes


def read_topology(
    gpu_bus_ids: list[str], handles: list[Any], lost: set[int]
) -> tuple[tuple[str, ...], ...]:
    """`nvidia-smi topo -m`'s matrix: NV<n> where NVLinks join two GPUs (directly or
    through NVSwitches), else the PCIe path's common ancestor."""
    bus_ids = [sysfs_bus_id(bus_id) for bus_id in gpu_bus_ids]
    links = [active_nvlinks(h)[1] if i not in lost else []
             for i, h in enumerate(handles)]  # fmt: skip
    matrix: list[list[str]] = []
    for i, handle_i in enumerate(handles):
        row: list[str] = []
        for j, handle_j in enumerate(handles):
            if i == j:
                row.append("X")
                continue
            direct = links[i].count(bus_ids[j])
            switched_i = sum(1 for bus in links[i] if bus not in bus_ids)
            switched_j = sum(1 for bus in links[j] if bus not in bus_ids)
            if direct or (switched_i and switched_j):
                row.append(f"NV{direct or min(switched_i, switched_j)}")
                continue
            level = _call_quiet(pynvml.nvmlDeviceGetTopologyCommonAncestor, handle_i, handle_j)
            row.append(TOPOLOGY_LABELS.get(level, "N/A") if level is not None else "N/A")
        matrix.append(row)
    return tuple(tuple(row) for row in matrix)
