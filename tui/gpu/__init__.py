"""GPU sources and their snapshot types (no Textual here)."""

from tui.gpu.model import (
    GpuBoxSnapshot,
    GpuProcessUsage,
    GpuSample,
    GpuSource,
    GpuStatic,
)

__all__ = ["GpuBoxSnapshot", "GpuProcessUsage", "GpuSample", "GpuSource", "GpuStatic"]
