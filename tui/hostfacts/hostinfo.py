"""The Host overview: who this machine is, collected by one fixed script sent on stdin.

The script runs under `/bin/sh -s` on the target (local or SSH), so no quoting
reaches a login shell and no Python is needed there. It runs once per connection;
after that only memory, uptime and load are re-read (refresh_vitals).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path

from tui.hosts.base import Host
from tui.hosts.reader import run_read

OVERVIEW_SCRIPT = r"""
echo "hostname=$(cat /proc/sys/kernel/hostname 2>/dev/null || hostname)"
if [ -r /etc/os-release ]; then . /etc/os-release; fi
echo "os=${PRETTY_NAME:-$(uname -s)}"
echo "kernel=$(uname -r)"
echo "arch=$(uname -m)"
echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
echo "cpu_cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)"
echo "numa_nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
echo "mem_total_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
echo "mem_available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)"
echo "uptime_s=$(cut -d' ' -f1 /proc/uptime)"
echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L 2>&1 | sed 's/^/gpu=/'
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  echo "driver=$driver"
else
  echo "gpu_error=no NVIDIA driver (nvidia-smi not found)"
fi
"""


@dataclass(frozen=True, slots=True)
class HostOverview:
    hostname: str
    os_name: str
    kernel: str
    arch: str
    cpu_model: str
    cpu_cores: int | None
    numa_nodes: int | None
    mem_total_bytes: int | None
    mem_available_bytes: int | None
    uptime_s: float | None
    loadavg: str
    gpu_names: tuple[str, ...]
    driver_version: str | None
    gpu_error: str | None
    simulated: bool = False


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def parse_overview(output: str) -> HostOverview:
    """key=value lines from OVERVIEW_SCRIPT; missing keys become empty or None."""
    values: dict[str, str] = {}
    gpus: list[str] = []
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key == "gpu":
            if value.startswith("GPU "):
                gpus.append(value.split(":", 1)[1].split("(UUID")[0].strip())
            elif value.strip():
                values["gpu_error"] = value.strip()
        else:
            values[key] = value.strip()
    mem_total_kib = _int_or_none(values.get("mem_total_kib"))
    mem_available_kib = _int_or_none(values.get("mem_available_kib"))
    uptime_s = _float_or_none(values.get("uptime_s"))
    gpu_error = values.get("gpu_error")
    if not gpus and not gpu_error:
        gpu_error = "no NVIDIA GPU found"
    return HostOverview(
        hostname=values.get("hostname", "?"),
        os_name=values.get("os", "?"),
        kernel=values.get("kernel", "?"),
        arch=values.get("arch", "?"),
        cpu_model=values.get("cpu_model", "") or "?",
        cpu_cores=_int_or_none(values.get("cpu_cores")),
        numa_nodes=_int_or_none(values.get("numa_nodes")),
        mem_total_bytes=mem_total_kib * 1024 if mem_total_kib is not None else None,
        mem_available_bytes=mem_available_kib * 1024 if mem_available_kib is not None else None,
        uptime_s=uptime_s,
        loadavg=values.get("loadavg", ""),
        gpu_names=tuple(gpus),
        driver_version=values.get("driver") or None,
        gpu_error=None if gpus else gpu_error,
    )


async def collect_overview(host: Host, timeout_s: float = 15.0) -> HostOverview:
    """Run the overview script on the host and parse what it printed."""
    result = await host.run(["/bin/sh", "-s"], timeout_s=timeout_s, stdin_text=OVERVIEW_SCRIPT)
    return parse_overview(result.stdout)


VITALS_FILES = ("/proc/meminfo", "/proc/uptime", "/proc/loadavg")


async def _vitals_text(host: Host, timeout_s: float) -> str:
    """The three files' text: read in-process here (no `cat` per refresh); there a `cat` in
    the host's long-lived reader (no SSH session per refresh)."""
    if host.is_local:
        parts = []
        for path in VITALS_FILES:
            with contextlib.suppress(OSError):
                parts.append(Path(path).read_text())
        return "".join(parts)
    return (await run_read(host, ["cat", *VITALS_FILES], timeout_s=timeout_s)).stdout


async def refresh_vitals(
    host: Host, overview: HostOverview, timeout_s: float = 15.0
) -> HostOverview:
    """The overview with fresh memory, uptime and load: one `cat`, not the whole script.

    The full script starts nvidia-smi twice, which costs more CPU than a minute of
    GPU refreshes; what it learns (OS, CPU, GPUs, driver) does not change while connected.
    """
    text = await _vitals_text(host, timeout_s)
    mem_available_bytes, uptime_s, loadavg = overview.mem_available_bytes, None, ""
    for line in text.splitlines():
        fields = line.split()
        if line.startswith("MemAvailable:") and len(fields) >= 2:
            mem_available_kib = _int_or_none(fields[1])
            if mem_available_kib is not None:
                mem_available_bytes = mem_available_kib * 1024
        elif ":" not in line and len(fields) == 2:  # /proc/uptime: up and idle seconds
            uptime_s = _float_or_none(fields[0])
        elif ":" not in line and len(fields) == 5:  # /proc/loadavg
            loadavg = " ".join(fields[:3])
    return replace(
        overview,
        mem_available_bytes=mem_available_bytes,
        uptime_s=uptime_s if uptime_s is not None else overview.uptime_s,
        loadavg=loadavg or overview.loadavg,
    )
