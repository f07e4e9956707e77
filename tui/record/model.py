"""What the recorder stores: timeline events, and GPU ticks packed into one small blob.

A GPU tick for 8 GPUs is one row (not eight): per GPU a fixed run of float32
values, NaN for "not reported", the whole zlib-compressed. That keeps a day at 1 s for 8 GPUs well under
the 50 MB budget and makes a seek one primary-key lookup.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass, field, replace
from typing import Any

from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample, GpuStatic

# Timeline kinds, in the order the Timeline pane offers them as filters.
KINDS = ("gpu", "engine", "service", "log", "action", "alert")

MIB = 1024 * 1024

# (GpuSample attribute, scale stored = value / scale); memory in MiB keeps float32 exact.
_GPU_FIELDS: tuple[tuple[str, float], ...] = (
    ("memory_used_bytes", MIB),
    ("memory_total_bytes", MIB),
    ("utilization_gpu_pct", 1.0),
    ("utilization_memory_pct", 1.0),
    ("temperature_c", 1.0),
    ("power_w", 1.0),
    ("power_limit_w", 1.0),
    ("sm_clock_mhz", 1.0),
    ("memory_clock_mhz", 1.0),
    ("pcie_gen", 1.0),
    ("pcie_width", 1.0),
    ("pcie_tx_bytes_per_s", 1.0),
    ("pcie_rx_bytes_per_s", 1.0),
    ("ecc_uncorrected_errors", 1.0),
)
_INT_FIELDS = frozenset(
    (
        "memory_used_bytes",
        "memory_total_bytes",
        "sm_clock_mhz",
        "memory_clock_mhz",
        "pcie_gen",
        "pcie_width",
        "ecc_uncorrected_errors",
    )
)
# index, lost flag, then the fields
_GPU_STRUCT = struct.Struct("<" + "f" * (2 + len(_GPU_FIELDS)))
_COUNT = struct.Struct("<H")
_PROC_STRUCT = struct.Struct("<HIfB")  # GPU, pid, MiB used, name length (the name follows)
NAN = float("nan")
# Blob format: this byte, then zlib (format changes get the next byte value).
# Compressed, a tick of 8 GPUs is ~130-200 bytes instead of 512+: the budget's headroom.
_ZLIB = b"\x01"


@dataclass(frozen=True, slots=True)
class Event:
    """One line of the timeline. `key` makes a re-delivered event (a log line read
    again after a reconnect) land once; `data` carries the state for replay."""

    ts_s: float
    kind: str  # one of KINDS
    source: str  # unit, load, log, procs, audit, bench, capacity, alert, readiness, gpu
    text: str
    gpu: int | None = None
    key: str | None = None
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def as_json(self) -> dict[str, Any]:
        """The `servedeck timeline --json` shape."""
        return {
            "ts": round(self.ts_s, 3),
            "kind": self.kind,
            "source": self.source,
            "text": self.text,
            "gpu": self.gpu,
        }


@dataclass(frozen=True, slots=True)
class MetricsRow:
    """Serving metrics at one poll (a subset of tui.serving.metrics.ServerMetrics, all optional)."""

    ts_s: float
    running_reqs: int | None = None
    waiting_reqs: int | None = None
    kv_cache_usage_pct: float | None = None
    prompt_tokens_per_s: float | None = None
    generation_tokens_per_s: float | None = None
    preemptions_total: int | None = None
    ttft_p50_s: float | None = None
    ttft_p90_s: float | None = None
    ttft_p99_s: float | None = None
    itl_p50_s: float | None = None
    itl_p90_s: float | None = None
    itl_p99_s: float | None = None
    spec_acceptance_rate: float | None = None  # 0..1; None: no speculative decoding
    spec_mean_accepted_length: float | None = None


METRICS_COLUMNS: tuple[str, ...] = tuple(
    name for name in MetricsRow.__dataclass_fields__ if name != "ts_s"
)


def _stored(value: float | int | None, scale: float) -> float:
    return NAN if value is None else float(value) / scale


def pack_gpu_samples(samples: tuple[GpuSample, ...]) -> bytes:
    """The blob of one tick: per GPU its index, a lost flag and the numeric fields, then
    the processes on the GPUs (GPU, pid, MiB, name), all zlib-compressed."""
    parts = [_COUNT.pack(len(samples))]
    for sample in samples:
        values = [float(sample.index), 1.0 if sample.lost else 0.0]
        values.extend(_stored(getattr(sample, name), scale) for name, scale in _GPU_FIELDS)
        parts.append(_GPU_STRUCT.pack(*values))
    processes = [proc for sample in samples for proc in sample.processes]
    parts.append(_COUNT.pack(len(processes)))
    for proc in processes:
        name = proc.process_name.encode()[:255]
        parts.append(
            _PROC_STRUCT.pack(
                proc.gpu_index, proc.pid, _stored(proc.used_memory_bytes, MIB), len(name)
            )
        )
        parts.append(name)
    return _ZLIB + zlib.compress(b"".join(parts), 6)


def _loaded(value: float, name: str, scale: float) -> float | int | None:
    if math.isnan(value):
        return None
    value *= scale
    return round(value) if name in _INT_FIELDS else round(value, 3)


def unpack_gpu_samples(blob: bytes) -> tuple[GpuSample, ...]:
    """The GpuSamples of a stored tick; a damaged blob yields nothing, not an error."""
    if blob[:1] != _ZLIB:
        return ()
    try:
        data = zlib.decompress(blob[1:])
        (count,) = _COUNT.unpack_from(data, 0)
        offset = _COUNT.size
        samples = []
        for _ in range(count):
            index, lost, *values = _GPU_STRUCT.unpack_from(data, offset)
            offset += _GPU_STRUCT.size
            fields = {
                name: _loaded(value, name, scale)
                for (name, scale), value in zip(_GPU_FIELDS, values, strict=True)
            }
            samples.append(GpuSample(index=int(index), lost=bool(lost), **fields))  # type: ignore[arg-type]
        (count,) = _COUNT.unpack_from(data, offset)
        offset += _COUNT.size
        processes: dict[int, list[GpuProcessUsage]] = {}
        for _ in range(count):
            gpu, pid, used_mib, length = _PROC_STRUCT.unpack_from(data, offset)
            offset += _PROC_STRUCT.size
            name = data[offset : offset + length].decode(errors="replace")
            offset += length
            used = _loaded(used_mib, "memory_used_bytes", MIB)
            processes.setdefault(gpu, []).append(GpuProcessUsage(pid, gpu, used, name))  # type: ignore[arg-type]
    except (zlib.error, struct.error):
        return ()
    return tuple(
        replace(sample, processes=tuple(processes.get(sample.index, ()))) for sample in samples
    )


def recorded_snapshot(
    ts_s: float, blob: bytes, statics: tuple[GpuStatic, ...] = ()
) -> GpuBoxSnapshot:
    """A GpuBoxSnapshot as the GPU pane draws it, rebuilt from a stored tick."""
    return GpuBoxSnapshot(
        source="recorded",
        taken_at_s=ts_s,
        statics=statics,
        samples=unpack_gpu_samples(blob),
        available=bool(blob),
        error=None if blob else "no GPU sample recorded at this time",
    )
