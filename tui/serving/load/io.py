"""Reading a load's I/O on the host: shard residency and read/CPU counters, through a Host.

The fixed helper (tui/serving/load/io_helper.py) goes on stdin to `python3 -`, like the
process helper, so local and remote hosts share one code path. Residency uses
util-linux `fincore` when the host has it, the helper's mincore otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from tui.core.errors import HostError
from tui.hosts.base import Host

# Sent on stdin to /bin/sh: fincore on the shards of one folder (or the files named).
_FINCORE = r"""
command -v fincore >/dev/null 2>&1 || { echo "no-fincore"; exit 0; }
target="$1"
if [ -d "$target" ]; then
  set -- "$target"/*.safetensors
  [ -e "$1" ] || { echo "no-shards"; exit 0; }
else
  set -- "$target"
fi
# mincore (under fincore too) reports every page of a file this user neither owns nor
# may write as cached (Linux >= 5.2): no figure then; the helper says why.
for f in "$@"; do [ -O "$f" ] || [ -w "$f" ] || { echo "not-writable"; exit 0; }; done
fincore --bytes --noheadings --raw --output RES,SIZE,FILE -- "$@"
"""


@cache
def helper_source() -> str:
    return resources.files("tui.serving.load").joinpath("io_helper.py").read_text(encoding="utf-8")


async def run_loadio(
    host: Host, request: dict[str, Any], timeout_s: float = 30.0
) -> dict[str, Any]:
    """One helper request; a one-line HostError when it cannot answer."""
    result = await host.run(
        ["python3", "-", json.dumps(request)], timeout_s=timeout_s, stdin_text=helper_source()
    )
    last = result.stdout.strip().splitlines()[-1:] or [""]
    try:
        answer = json.loads(last[0])
    except ValueError:
        stderr = result.stderr.strip().splitlines()
        why = stderr[-1] if stderr else f"exit status {result.exit_status}, no JSON answer"
        raise HostError(host.label, f"load I/O helper failed: {why}") from None
    if not isinstance(answer, dict) or not answer.get("ok"):
        error = answer.get("error") if isinstance(answer, dict) else "malformed answer"
        raise HostError(host.label, f"load I/O helper failed: {error}")
    return answer


@dataclass(frozen=True, slots=True)
class Residency:
    """How much of a checkpoint's shards is in the page cache."""

    files: int
    size_bytes: int
    resident_bytes: int
    method: str  # fincore | mincore
    errors: tuple[str, ...] = ()

    @property
    def resident_pct(self) -> float | None:
        return 100.0 * self.resident_bytes / self.size_bytes if self.size_bytes else None


def _from_fincore(text: str) -> Residency | None:
    files, size, resident = 0, 0, 0
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            return None
        resident += min(int(parts[0]), int(parts[1]))  # RES counts whole pages
        size += int(parts[1])
        files += 1
    return Residency(files, size, resident, "fincore") if files else None


async def checkpoint_residency(host: Host, path: str, *, prefer_fincore: bool = True) -> Residency:
    """Residency of every *.safetensors in `path` (a folder) or of one file."""
    if prefer_fincore:
        result = await host.run(["/bin/sh", "-s", "--", path], timeout_s=30.0, stdin_text=_FINCORE)
        if result.ok:
            parsed = _from_fincore(result.stdout)
            if parsed is not None:
                return parsed
    answer = await run_loadio(host, {"op": "residency", "paths": [path]})
    files = [f for f in answer["files"] if "error" not in f]
    errors = tuple(f"{f['path']}: {f['error']}" for f in answer["files"] if "error" in f)
    return Residency(
        len(files),
        sum(f["size_bytes"] for f in files),
        sum(f["resident_bytes"] for f in files),
        "mincore",
        errors,
    )


async def drop_from_cache(host: Host, path: str) -> Residency:
    """posix_fadvise(DONTNEED) on the shards: a cold load on demand (tests, benchmarks)."""
    answer = await run_loadio(host, {"op": "drop", "paths": [path]})
    files = [f for f in answer["files"] if "error" not in f]
    return Residency(
        len(files),
        sum(f["size_bytes"] for f in files),
        sum(f["resident_bytes"] for f in files),
        "mincore",
    )


@dataclass(frozen=True, slots=True)
class IoSample:
    """Cumulative counters at one instant: rates come from two samples."""

    at_s: float
    tree_read_bytes: int | None
    tree_cpu_s: float | None
    device: str | None
    device_read_bytes: int | None
    # None where not asked (no pid): whether the tree's root still runs, and how many
    # of its processes hid their /proc/PID/io (another user's, read without root).
    tree_alive: bool | None = None
    tree_unreadable: int | None = None


async def io_sample(host: Host, pid: int | None, path: str | None) -> IoSample:
    answer = await run_loadio(host, {"op": "sample", "pid": pid, "path": path}, timeout_s=15.0)
    ticks = answer.get("tree_cpu_ticks")
    read = answer.get("tree_read_bytes")
    if read == 0 and not answer.get("tree_pids") and answer.get("tree_unreadable"):
        read = None  # every io file was hidden: unknown, not "read nothing"
    return IoSample(
        at_s=float(answer["at_s"]),
        tree_read_bytes=read,
        tree_cpu_s=ticks / max(1, int(answer["clock_ticks"])) if ticks is not None else None,
        device=answer.get("device"),
        device_read_bytes=answer.get("device_read_bytes"),
        tree_alive=answer.get("tree_alive"),
        tree_unreadable=answer.get("tree_unreadable"),
    )
