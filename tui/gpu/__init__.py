"""GPU sources and their snapshot types (no Textual here).

factory.py: Pick the GPU source for a host: NVML locally, nvidia-smi over the Host otherwise
history.py: Per-GPU history for sparklines, and how fast memory fills while a model loads
model.py: GPU snapshots: the one shape every GPU source (NVML, nvidia-smi, simulator) yields
nvml.py: NvmlGpuSource: this machine's GPUs through NVML (pynvml from nvidia-ml-py)
nvml_calls.py: NVML calls made safe: NOT_SUPPORTED as None, a lost GPU, a missing driver; the slow metrics read
nvml_topology.py: The GPUs' interconnect through NVML: active NVLinks and the `nvidia-smi topo -m` matrix
proc_util.py: Per-process GPU utilization from NVML's samples: what one read says about each pid
procinfo.py: Who owns a local GPU process and since when, read from /proc
smi.py: SmiGpuSource: GPUs of any Host through `nvidia-smi`, for machines with no Python
smi_parse.py: Pure parsers for `nvidia-smi` output: CSV queries, `topo -m`, version lines
"""

from tui.gpu.model import (
    GpuBoxSnapshot,
    GpuProcessUsage,
    GpuSample,
    GpuSource,
    GpuStatic,
)

__all__ = ["GpuBoxSnapshot", "GpuProcessUsage", "GpuSample", "GpuSource", "GpuStatic"]
