"""The simulator's slow-disk mode: real checkpoint shards, read at a set disk rate.

`make_shards` writes N real files of random bytes; during the weights phase the
server reads each one, sleeping so that the bytes that were not in the page cache
come in at `disk_bytes_per_s` (those already cached come at memory speed), the way
a 550 GB checkpoint loads in 2 minutes from the cache or 30 from a slow disk.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tui.serving.load.io_helper import resident_bytes

CHUNK_BYTES = 4 * 1024**2


def make_shards(folder: Path, count: int, size_bytes: int) -> list[Path]:
    """count real *.safetensors files of size_bytes random bytes (written once)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(1, count + 1):
        path = folder / f"model-{index:05d}-of-{count:05d}.safetensors"
        if not path.exists() or path.stat().st_size != size_bytes:
            with path.open("wb") as handle:
                left = size_bytes
                while left > 0:
                    handle.write(os.urandom(min(CHUNK_BYTES, left)))
                    left -= CHUNK_BYTES
        paths.append(path)
    return paths


def shard_files(folder: str | Path) -> list[Path]:
    return sorted(Path(folder).glob("*.safetensors"))


def read_shard(path: Path, disk_bytes_per_s: float | None) -> int:
    """Read the whole file; the uncached part paced to the disk rate. Returns bytes read."""
    try:
        size, resident = resident_bytes(str(path))
    except OSError:
        return 0
    pace_s = (size - resident) / disk_bytes_per_s if disk_bytes_per_s else 0.0
    started = time.monotonic()
    done = 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            done += len(chunk)
            due = started + pace_s * done / max(size, 1)
            time.sleep(max(0.0, due - time.monotonic()))
    return done
