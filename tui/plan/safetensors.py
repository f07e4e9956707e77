"""Safetensors headers over any Host: exact tensor names, shapes, dtypes and byte sizes.

A safetensors file starts with an 8-byte little-endian header length and a JSON
header; only those bytes are read, never tensor data, so a 554 GiB checkpoint
costs a few hundred kilobytes per shard even over SSH.
"""

from __future__ import annotations

import json
import math
import posixpath
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from tui.core.errors import HostError, ServedeckError
from tui.hosts.base import Host

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the format's own limit

DTYPE_BYTES: dict[str, float] = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
    "F4": 0.5,
}


class CheckpointError(ServedeckError):
    """A model directory or safetensors file that cannot be read as a checkpoint (exit 2)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    size_bytes: int


@dataclass(frozen=True, slots=True)
class SafetensorsHeader:
    """One shard: its tensors and the size the file must have."""

    path: str
    tensors: tuple[TensorInfo, ...]
    header_bytes: int


def header_length(prefix: bytes, source: str) -> int:
    """The JSON header length from a file's first 8 bytes."""
    if len(prefix) < 8:
        raise CheckpointError(f"{source}: too short for a safetensors file ({len(prefix)} bytes)")
    (length,) = struct.unpack("<Q", prefix[:8])
    if length == 0 or length > MAX_HEADER_BYTES:
        raise CheckpointError(f"{source}: header length {length} is not a safetensors header")
    return length


def parse_header(raw: bytes, source: str) -> SafetensorsHeader:
    """The whole prefix (8 bytes + JSON) -> SafetensorsHeader, every entry checked."""
    length = header_length(raw, source)
    if len(raw) < 8 + length:
        raise CheckpointError(f"{source}: header says {length} bytes, file has {len(raw) - 8}")
    try:
        header = json.loads(raw[8 : 8 + length])
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CheckpointError(f"{source}: safetensors header is not valid JSON") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{source}: safetensors header is not a JSON object")
    tensors = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors.append(_tensor(name, entry, source))
    return SafetensorsHeader(source, tuple(tensors), length)


def _tensor(name: str, entry: object, source: str) -> TensorInfo:
    where = f"{source}: tensor {name!r}"
    if not isinstance(entry, dict):
        raise CheckpointError(f"{where}: entry is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise CheckpointError(f"{where}: unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise CheckpointError(f"{where}: shape should be a list of sizes, got {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise CheckpointError(f"{where}: data_offsets should be [begin, end], got {offsets!r}")
    size = offsets[1] - offsets[0]
    expected = math.ceil(math.prod(shape) * DTYPE_BYTES[dtype])
    if size != expected:
        raise CheckpointError(
            f"{where}: data_offsets span {size} bytes but {dtype} x {shape} is {expected}"
        )
    return TensorInfo(name, dtype, tuple(shape), size)


async def read_header(host: Host, path: str) -> SafetensorsHeader:
    """Read one shard's header through host.read_file: 8 bytes, then exactly the header."""
    prefix = await host.read_file(path, max_bytes=8)
    length = header_length(prefix, path)
    return parse_header(await host.read_file(path, max_bytes=8 + length), path)


async def list_shards(host: Host, model_dir: str) -> list[str]:
    """Shard paths: from model.safetensors.index.json when present, else the folder's files."""
    index_path = posixpath.join(model_dir, "model.safetensors.index.json")
    try:
        raw = await host.read_file(index_path)
    except HostError:
        raw = None
    if raw is not None:
        try:
            weight_map = json.loads(raw)["weight_map"]
            names = sorted(set(weight_map.values()))
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError):
            raise CheckpointError(
                f"{index_path}: not a safetensors index (no weight_map)"
            ) from None
        return [posixpath.join(model_dir, name) for name in names]
    result = await host.run(["find", model_dir, "-maxdepth", "1", "-name", "*.safetensors"])
    if not result.ok:
        raise CheckpointError(f"{model_dir}: cannot list the folder: {result.stderr.strip()}")
    return sorted(line for line in result.stdout.splitlines() if line)


async def read_headers(host: Host, paths: Sequence[str]) -> tuple[SafetensorsHeader, ...]:
    """Every shard's header, in order; one failing shard names itself."""
    return tuple([await read_header(host, path) for path in paths])
