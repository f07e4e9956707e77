"""The GPUs a plan is made for: stated on the command line or taken from a live snapshot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tui.core.errors import CommandNotFound, ServedeckError
from tui.gpu.model import GpuBoxSnapshot
from tui.hosts.base import Host

GIB = 1024**3


class GpuInventoryError(ServedeckError):
    """No usable GPUs to plan for (exit code 2)."""

    exit_code = 2


class NoGpus(GpuInventoryError):
    """The host has no NVIDIA GPU to plan for (no nvidia-smi, or it lists none): a CPU box.

    Distinct from a failing nvidia-smi (a GPU box with a broken driver), so a caller that
    can go on without GPUs (the tune on a CPU build) says so instead of inventing one."""


@dataclass(frozen=True, slots=True)
class GpuInventory:
    """Identical-enough GPUs of one box; the smallest one's memory is what counts.

    nvlink None and numa_nodes () mean "not known", and rules that need them stay quiet.
    """

    count: int
    memory_bytes: int
    compute_capability: str | None = None
    nvlink: bool | None = None
    numa_nodes: tuple[int | None, ...] = ()
    name: str = ""
    source: str = "stated"

    def __post_init__(self) -> None:
        if self.count < 1:
            raise GpuInventoryError(f"GPU count must be at least 1, got {self.count}")
        if self.memory_bytes <= 0:
            raise GpuInventoryError("GPU memory must be more than 0 GiB")

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB

    def describe(self) -> str:
        parts = [f"{self.count} x {self.memory_gib:.1f} GiB"]
        if self.name:
            parts.append(self.name)
        if self.compute_capability:
            parts.append(f"sm_{self.compute_capability.replace('.', '')}")
        if self.nvlink is not None:
            parts.append("NVLink" if self.nvlink else "no NVLink (PCIe)")
        return ", ".join(parts)


def stated_inventory(
    gpus: int, vram_gib: float, cc: str | None = None, nvlink: bool | None = None
) -> GpuInventory:
    """`--gpus N --vram-gib X [--cc 12.0] [--nvlink/--no-nvlink]`."""
    if gpus < 1:
        raise GpuInventoryError(f"--gpus must be at least 1, got {gpus}")
    if vram_gib <= 0:
        raise GpuInventoryError(f"--vram-gib must be more than 0, got {vram_gib:g}")
    return GpuInventory(gpus, int(vram_gib * GIB), cc, nvlink)


def _all_nvlinked(topology: Sequence[Sequence[str]], count: int) -> bool | None:
    if len(topology) < count or any(len(row) < count for row in topology[:count]):
        return None
    return all(
        topology[i][j].startswith("NV") for i in range(count) for j in range(count) if i != j
    )


def inventory_from_snapshot(snapshot: GpuBoxSnapshot) -> GpuInventory:
    """A live GpuBoxSnapshot -> GpuInventory; refuses a box with no GPU."""
    if not snapshot.available or not snapshot.statics:
        reason = snapshot.error or "no GPU in the snapshot"
        raise GpuInventoryError(f"no GPUs to plan for ({snapshot.source}): {reason}")
    memories = [s.memory_total_bytes for s in snapshot.statics if s.memory_total_bytes]
    if not memories:
        raise GpuInventoryError(f"no GPU reports its memory size ({snapshot.source})")
    first = snapshot.statics[0]
    return GpuInventory(
        count=len(snapshot.statics),
        memory_bytes=min(memories),
        compute_capability=first.compute_capability,
        nvlink=_all_nvlinked(snapshot.topology, len(snapshot.statics)),
        numa_nodes=tuple(s.numa_node for s in snapshot.statics),
        name=first.name,
        source=snapshot.source,
    )


async def inventory_from_nvidia_smi(host: Host) -> GpuInventory:
    """Ask the host's nvidia-smi for count, memory and compute capability (no topology)."""
    argv = [
        "nvidia-smi",
        "--query-gpu=name,memory.total,compute_cap",
        "--format=csv,noheader,nounits",
    ]
    try:
        result = await host.run(argv, timeout_s=20.0)
    except CommandNotFound:
        raise NoGpus(f"{host.label}: no nvidia-smi: no GPUs") from None
    if result.exit_status == 127:  # a shell's "command not found" (over SSH)
        raise NoGpus(f"{host.label}: no nvidia-smi: no GPUs")
    if not result.ok:
        detail = (result.stderr or result.stdout).strip().splitlines()[:1]
        raise GpuInventoryError(
            f"{host.label}: nvidia-smi failed ({'; '.join(detail) or result.exit_status}); "
            "state the GPUs with --gpus N --vram-gib X"
        )
    rows = [[c.strip() for c in line.split(",")] for line in result.stdout.splitlines() if line]
    try:
        memories = [int(float(row[1]) * 1024**2) for row in rows]
    except (IndexError, ValueError):
        raise GpuInventoryError(f"{host.label}: cannot read nvidia-smi's output") from None
    if not rows:
        raise NoGpus(f"{host.label}: nvidia-smi lists no GPU")
    cc = rows[0][2] if len(rows[0]) > 2 and rows[0][2] not in ("", "[N/A]") else None
    return GpuInventory(len(rows), min(memories), cc, None, (), rows[0][0], "nvidia-smi")
