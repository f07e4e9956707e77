"""Pure parsers for `nvidia-smi` output: CSV queries, `topo -m`, version lines.

No I/O here, so they are tested on captured text. Garbage never raises: a line
that cannot be read gives None (or is skipped), because a remote tool's output
is input we do not control. `[N/A]`, `[Not Supported]` and the like are None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tui.gpu.model import GpuProcessUsage, GpuSample, GpuStatic

MIB = 1024**2

# The fields of the long-lived `--query-gpu` stream, in the order they are asked for.
QUERY_GPU_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "utilization.memory",
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "clocks.sm",
    "clocks.mem",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "pcie.link.gen.max",
    "pcie.link.width.max",
    "compute_cap",
)
COMPUTE_APPS_FIELDS: tuple[str, ...] = ("gpu_uuid", "pid", "used_memory", "process_name")

_NOT_AVAILABLE = {"", "n/a", "na", "not supported", "unknown"}
_LOST_MARKERS = ("gpu requires reset", "gpu is lost", "unknown error")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU_LABEL = re.compile(r"^GPU(\d+)$")


def _value(raw: str) -> str | None:
    """The field's text, or None for n/a markers such as `[N/A]` and `[Not Supported]`."""
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        return None
    return None if text.lower() in _NOT_AVAILABLE else text


def _int(raw: str | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        try:
            return int(float(raw))  # type: ignore[arg-type]
        except (ValueError, OverflowError):
            return None


def _float(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw is not None else None
    except ValueError:
        return None
    return value if value is None or (value == value and abs(value) != float("inf")) else None


def _mib_bytes(raw: str | None) -> int | None:
    value = _float(raw)
    return int(value * MIB) if value is not None and value >= 0 else None


def _fields(line: str, names: Sequence[str]) -> dict[str, str] | None:
    parts = line.split(",", len(names) - 1)
    if len(parts) != len(names):
        return None
    return dict(zip(names, parts, strict=True))


def parse_query_gpu_line(line: str, fields: Sequence[str] = QUERY_GPU_FIELDS) -> GpuSample | None:
    """One `--query-gpu` CSV line (noheader, nounits) as a GpuSample; None when unreadable."""
    raw = _fields(line, fields)
    if raw is None:
        return None
    index = _int(_value(raw.get("index", "")))
    if index is None or index < 0:
        return None
    values = {name: _value(text) for name, text in raw.items()}
    lowered = line.lower()
    if any(marker in lowered for marker in _LOST_MARKERS):
        return GpuSample(index=index, lost=True, error="nvidia-smi: GPU requires reset (lost)")
    return GpuSample(
        index=index,
        memory_used_bytes=_mib_bytes(values.get("memory.used")),
        memory_total_bytes=_mib_bytes(values.get("memory.total")),
        utilization_gpu_pct=_float(values.get("utilization.gpu")),
        utilization_memory_pct=_float(values.get("utilization.memory")),
        temperature_c=_float(values.get("temperature.gpu")),
        power_w=_float(values.get("power.draw")),
        power_limit_w=_float(values.get("power.limit")),
        sm_clock_mhz=_int(values.get("clocks.sm")),
        memory_clock_mhz=_int(values.get("clocks.mem")),
        pcie_gen=_int(values.get("pcie.link.gen.current")),
        pcie_width=_int(values.get("pcie.link.width.current")),
    )


def parse_query_gpu_static(line: str, fields: Sequence[str] = QUERY_GPU_FIELDS) -> GpuStatic | None:
    """The static facts carried by the same `--query-gpu` line; None when unreadable."""
    raw = _fields(line, fields)
    if raw is None:
        return None
    values = {name: _value(text) for name, text in raw.items()}
    index = _int(values.get("index"))
    if index is None or index < 0:
        return None
    return GpuStatic(
        index=index,
        name=values.get("name") or "unknown GPU",
        uuid=values.get("uuid") or "",
        bus_id=values.get("pci.bus_id") or "",
        memory_total_bytes=_mib_bytes(values.get("memory.total")),
        compute_capability=values.get("compute_cap"),
        pcie_max_gen=_int(values.get("pcie.link.gen.max")),
        pcie_max_width=_int(values.get("pcie.link.width.max")),
        power_limit_w=_float(values.get("power.limit")),
    )


def parse_compute_apps(
    text: str, index_by_uuid: Mapping[str, int] | None = None
) -> tuple[GpuProcessUsage, ...]:
    """`--query-compute-apps=gpu_uuid,pid,used_memory,process_name` lines; bad lines skipped.

    A process on a GPU whose uuid is not in index_by_uuid gets gpu_index -1 when no
    mapping is given at all, and is skipped when a mapping is given but lacks it.
    """
    usages = []
    for line in text.splitlines():
        raw = _fields(line, COMPUTE_APPS_FIELDS)
        if raw is None:
            continue
        uuid = (_value(raw["gpu_uuid"]) or "").strip()
        pid = _int(_value(raw["pid"]))
        if not uuid or pid is None or pid <= 0:
            continue
        if index_by_uuid is None:
            index = -1
        elif uuid in index_by_uuid:
            index = index_by_uuid[uuid]
        else:
            continue
        usages.append(
            GpuProcessUsage(
                pid=pid,
                gpu_index=index,
                used_memory_bytes=_mib_bytes(_value(raw["used_memory"])),
                process_name=raw["process_name"].strip(),
                kind="compute",
            )
        )
    return tuple(usages)


@dataclass(frozen=True, slots=True)
class SmiTopology:
    """The GPU part of `nvidia-smi topo -m`: the GPU x GPU matrix and each GPU's affinity."""

    matrix: tuple[tuple[str, ...], ...] = ()
    cpu_affinity: tuple[str | None, ...] = ()
    numa_affinity: tuple[int | None, ...] = ()


def parse_topo(text: str) -> SmiTopology:
    """Parse `nvidia-smi topo -m`; unreadable text gives an empty SmiTopology."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header: list[str] | None = None
    rows: dict[int, list[str]] = {}
    for line in lines:
        cells = [cell.strip() for cell in line.split("\t")]
        if header is None:
            if "GPU0" in cells:
                header = cells
            continue
        match = _GPU_LABEL.match(cells[0]) if cells else None
        if match:
            rows[int(match.group(1))] = cells
    if header is None or not rows:
        return SmiTopology()
    device_columns = [name for name in header[1:] if re.match(r"^(GPU|NIC)\d+$", name)]
    gpu_columns = [i for i, name in enumerate(device_columns) if name.startswith("GPU")]
    info_names = [name for name in header[1 + len(device_columns) :] if name]
    count = max(rows) + 1
    matrix, cpus, numas = [], [], []
    for index in range(count):
        cells = rows.get(index, [])
        devices = cells[1 : 1 + len(device_columns)]
        matrix.append(tuple((devices[i] if i < len(devices) else "") or "N/A" for i in gpu_columns))
        info_cells = [cell for cell in cells[1 + len(device_columns) :] if cell]
        info = dict(zip(info_names, info_cells, strict=False))
        cpus.append(_value(info.get("CPU Affinity", "")))
        numas.append(_int(_value(info.get("NUMA Affinity", ""))))
    return SmiTopology(tuple(matrix), tuple(cpus), tuple(numas))


_DRIVER_PATTERNS = (
    re.compile(r"DRIVER version\s*:\s*(\S+)", re.IGNORECASE),
    re.compile(r"Driver Version:\s*(\S+)"),
)
_CUDA_PATTERN = re.compile(r"CUDA Version\s*:\s*(\d+(?:\.\d+)*)", re.IGNORECASE)


def parse_versions(text: str) -> tuple[str | None, str | None]:
    """Driver and CUDA versions from `nvidia-smi --version` or the plain `nvidia-smi` header."""
    driver = None
    for pattern in _DRIVER_PATTERNS:
        match = pattern.search(text)
        if match:
            driver = match.group(1)
            break
    cuda = _CUDA_PATTERN.search(text)
    return driver, cuda.group(1) if cuda else None
