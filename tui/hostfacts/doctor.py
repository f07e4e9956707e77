"""`servedeck doctor`: one verdict line per thing the console depends on.

Every probe runs through the profile's Host, so the same checks hold locally
and over SSH. Probes never raise: a failure is a verdict, not a traceback.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.hosts.base import Host

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"

# Sent on stdin to /bin/sh on the target: which HTTP client exists, then one request.
_PORT_PROBE = r"""
url="$1"
if command -v curl >/dev/null 2>&1; then
  code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$url/health") || code=refused
  echo "http=$code"
elif command -v python3 >/dev/null 2>&1; then
  python3 - "$url" <<'PY'
import sys, urllib.request, urllib.error
try:
    print("http=%d" % urllib.request.urlopen(sys.argv[1] + "/health", timeout=5).status)
except urllib.error.HTTPError as e:
    print("http=%d" % e.code)
except Exception:
    print("http=refused")
PY
else
  echo "http=noclient"
fi
"""


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    name: str
    verdict: str  # ok | warn | fail | skip
    detail: str


async def _has_command(host: Host, command: str) -> str | None:
    """The command's path on the host, or None."""
    script = f'command -v "{command}" 2>/dev/null || true\n'
    result = await host.run(["/bin/sh", "-s"], timeout_s=10, stdin_text=script)
    path = result.stdout.strip()
    return path or None


async def check_reachable(host: Host, profile: Profile) -> DoctorCheck:
    started = time.monotonic()
    result = await host.run(
        ["/bin/sh", "-c", "uname -n"], timeout_s=profile.host.connect_timeout_s + 5
    )
    elapsed_ms = (time.monotonic() - started) * 1000
    if not result.ok:
        return DoctorCheck(
            "host", FAIL, f"{profile.host.route}: `uname -n` exited {result.exit_status}"
        )
    return DoctorCheck(
        "host", OK, f"{profile.host.route} answers as {result.stdout.strip()} ({elapsed_ms:.0f} ms)"
    )


async def check_nvml(host: Host, profile: Profile) -> DoctorCheck:
    if not host.is_local:
        return DoctorCheck("nvml", SKIP, "remote host: GPUs are read with nvidia-smi there")

    def _probe() -> DoctorCheck:
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as error:  # pynvml raises its own error family, or ImportError
            return DoctorCheck("nvml", WARN, f"NVML unavailable: {error}")
        try:
            count = pynvml.nvmlDeviceGetCount()
            driver = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return DoctorCheck("nvml", OK, f"{count} GPU(s), driver {driver}")

    return await asyncio.to_thread(_probe)


async def check_nvidia_smi(host: Host, profile: Profile) -> DoctorCheck:
    path = await _has_command(host, "nvidia-smi")
    if path is None:
        return DoctorCheck(
            "nvidia-smi", WARN, "not found: no NVIDIA driver on this host (GPU pane will say so)"
        )
    result = await host.run(["nvidia-smi", "-L"], timeout_s=20)
    gpus = [line for line in result.stdout.splitlines() if line.startswith("GPU ")]
    if not result.ok:
        return DoctorCheck(
            "nvidia-smi", FAIL, f"{path} exited {result.exit_status}: {result.stderr.strip()[:120]}"
        )
    return DoctorCheck("nvidia-smi", OK, f"{path}: {len(gpus)} GPU(s)")


async def check_tool(host: Host, tool: str, needed_for: str) -> DoctorCheck:
    path = await _has_command(host, tool)
    if path is None:
        return DoctorCheck(tool, WARN, f"not found ({needed_for} unavailable)")
    return DoctorCheck(tool, OK, path)


async def check_unit(host: Host, profile: Profile) -> DoctorCheck:
    unit = profile.service.unit
    if not unit:
        source = profile.service.log_file or "nothing"
        return DoctorCheck("unit", SKIP, f"no systemd unit in the profile (log source: {source})")
    if await _has_command(host, "systemctl") is None:
        return DoctorCheck("unit", SKIP, f"{unit}: systemctl not found")
    result = await host.run(
        ["systemctl", "show", unit, "-p", "LoadState,ActiveState,SubState"], timeout_s=15
    )
    values = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    if not result.ok and not values:
        # No answer at all: systemd itself is out of reach (a container without it as PID 1,
        # no D-Bus), which says nothing about the unit.
        reason = (result.stderr.strip().splitlines() or [f"exited {result.exit_status}"])[-1]
        return DoctorCheck("unit", FAIL, f"{unit}: systemctl cannot reach systemd ({reason})")
    if values.get("LoadState") in (None, "", "not-found"):
        return DoctorCheck("unit", FAIL, f"{unit}: not found on the host")
    return DoctorCheck(
        "unit", OK, f"{unit}: {values.get('ActiveState', '?')} ({values.get('SubState', '?')})"
    )


async def check_port(host: Host, profile: Profile) -> DoctorCheck:
    url = profile.service.base_url.rstrip("/")
    parts = urlsplit(url)
    result = await host.run(["/bin/sh", "-s", url], timeout_s=20, stdin_text=_PORT_PROBE)
    answer = result.stdout.strip().rpartition("http=")[2]
    where = f"{parts.hostname}:{profile.service.port}"
    if answer == "200":
        return DoctorCheck("service port", OK, f"{where}: /health answers 200")
    if answer in ("refused", "000"):
        return DoctorCheck(
            "service port",
            WARN,
            f"{where}: connection refused (stopped, or loading: vLLM listens once ready)",
        )
    if answer == "noclient":
        return DoctorCheck("service port", SKIP, f"{where}: neither curl nor python3 on the host")
    return DoctorCheck("service port", WARN, f"{where}: /health answered {answer or 'nothing'}")


async def run_doctor(host: Host, profile: Profile) -> list[DoctorCheck]:
    """All checks; an unreachable host ends the list early with one clear line."""
    try:
        reachable = await check_reachable(host, profile)
    except ServedeckError as error:
        return [DoctorCheck("host", FAIL, str(error))]
    checks = [reachable]
    if reachable.verdict == FAIL:
        return checks
    probes: list[Callable[[], Awaitable[DoctorCheck]]] = [
        lambda: check_nvml(host, profile),
        lambda: check_nvidia_smi(host, profile),
        lambda: check_tool(host, "systemctl", "service state and start/stop"),
        lambda: check_tool(host, "journalctl", "the journal log source"),
        lambda: check_unit(host, profile),
        lambda: check_port(host, profile),
    ]
    for probe in probes:
        try:
            checks.append(await probe())
        except ServedeckError as error:
            checks.append(DoctorCheck("probe", FAIL, str(error)))
    return checks


# Checks without which the console shows nothing useful: GPUs (either way to read them)
# and a server that answers.
_GPU_CHECKS = ("nvml", "nvidia-smi")


def doctor_verdict(checks: list[DoctorCheck]) -> tuple[bool, str]:
    """(ready, the verdict line): ready only with GPUs readable and the server answering."""
    failed = [check.name for check in checks if check.verdict == FAIL]
    if failed:
        return False, f"not ready: {len(failed)} check(s) failed ({', '.join(failed)})"
    gaps = []
    gpu_checks = [check for check in checks if check.name in _GPU_CHECKS]
    if gpu_checks and not any(check.verdict == OK for check in gpu_checks):
        gaps.append("no GPU driver answers")
    port = next((check for check in checks if check.name == "service port"), None)
    if port is not None and port.verdict != OK:
        gaps.append("the service does not answer")
    if gaps:
        return False, "not ready: " + ", ".join(gaps)
    warned = [check.name for check in checks if check.verdict == WARN]
    return True, "ready" + (f" ({len(warned)} warning(s): {', '.join(warned)})" if warned else "")
