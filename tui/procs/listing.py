"""Listing GPU processes: NVML pid hints in, verified and classified GpuProcess out.

The GPU source is only a hint provider: pass its GpuBoxSnapshot (or a list of
GpuProcessUsage); the helper checks each pid in /proc on the same host and adds
processes holding /dev/nvidia* that the driver did not list.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tui.core.config import Profile
from tui.core.redact import redact_text
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage
from tui.hosts.base import Host
from tui.procs.model import GpuMemoryShare, GpuProcess, ProcIdentity, ProcListing
from tui.procs.remote import run_helper

# Orphans of these engines are leftovers whatever the profile's patterns say.
ENGINE_PATTERNS: tuple[str, ...] = (
    "VLLM::*",
    "*vllm serve*",
    "*vllm.entrypoints*",
    "sglang::*",
    "*sglang.launch_server*",
    "*sglang serve*",
)

GpuHints = GpuBoxSnapshot | Sequence[GpuProcessUsage] | None


@dataclass(frozen=True, slots=True)
class ClassifyContext:
    """What classification needs beyond /proc: the unit, its state, the patterns."""

    unit: str | None = None
    unit_active: bool | None = None
    # The unit's MainPID: its whole process tree belongs to the running service.
    main_pid: int | None = None
    patterns: tuple[str, ...] = ENGINE_PATTERNS
    # Processes that adopt orphans (PR_SET_CHILD_SUBREAPER) besides PID 1 and known inits.
    subreaper_pids: tuple[int, ...] = ()
    # The console's pid when the host is this machine: its tree is never signalled.
    console_pid: int | None = None
    # Which open files count as holding a GPU (tests point it at a file of their own).
    device_prefix: str = "/dev/nvidia"
    # Wider leftovers (no GPU needed): pattern orphans and holders of the service's port.
    wide: bool = False
    port: int | None = None
    # Set by the restart guard: the service is meant to be down, so a port holder outside
    # the unit is in the way even when the unit's state is unknown.
    service_stopped: bool = False
    # The only pids the wider scan may name (a simulated box on a machine it shares with other
    # boxes knows what it started); None on a real host, where the machine is the box.
    scope_pids: tuple[int, ...] | None = None
    # Proofs that an orphan is the service's (a pattern alone is none): the (pid, start
    # ticks) the service recorded starting (the simulator's pids.log), and the unit's
    # User= ("root" when unset), WorkingDirectory= and ExecStart's virtualenv; None: unknown.
    owned: tuple[tuple[int, int], ...] = ()
    unit_user: str | None = None
    unit_dir: str | None = None
    unit_venv: str | None = None

    def as_request(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "unit_active": self.unit_active,
            "main_pid": self.main_pid,
            "patterns": list(self.patterns),
            "subreaper_pids": list(self.subreaper_pids),
            "console_pid": self.console_pid,
            "device_prefix": self.device_prefix,
            "wide": self.wide,
            "port": self.port,
            "service_stopped": self.service_stopped,
            "scope_pids": None if self.scope_pids is None else list(self.scope_pids),
            "owned": [list(record) for record in self.owned],
            "unit_user": self.unit_user,
            "unit_dir": self.unit_dir,
            "unit_venv": self.unit_venv,
        }


def console_is_subreaper() -> bool:
    """Whether this process adopts orphans (prctl PR_GET_CHILD_SUBREAPER); False off Linux."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        if libc.prctl(37, ctypes.byref(flag), 0, 0, 0) != 0:  # PR_GET_CHILD_SUBREAPER
            return False
        return bool(flag.value)
    except (OSError, AttributeError):
        return False


def context_for(
    profile: Profile,
    host: Host,
    unit_active: bool | None = None,
    subreaper_pids: Sequence[int] = (),
    main_pid: int | None = None,
) -> ClassifyContext:
    """The classification context for a profile's host; a local subreaper console counts."""
    patterns = tuple(dict.fromkeys((*profile.service.process_patterns, *ENGINE_PATTERNS)))
    subreapers = tuple(subreaper_pids)
    if host.is_local and console_is_subreaper():
        subreapers += (os.getpid(),)
    return ClassifyContext(
        unit=profile.service.unit,
        unit_active=unit_active,
        main_pid=main_pid,
        patterns=patterns,
        subreaper_pids=subreapers,
        console_pid=os.getpid() if host.is_local else None,
        wide=True,
        port=profile.service.port,
    )


def usages_of(gpu: GpuHints) -> tuple[GpuProcessUsage, ...]:
    if gpu is None:
        return ()
    if isinstance(gpu, GpuBoxSnapshot):
        return gpu.processes()
    return tuple(gpu)


async def unit_is_active(host: Host, unit: str) -> bool | None:
    """systemd's word on the unit: True (active/activating/reloading), False, or None."""
    try:
        result = await host.run(
            ["systemctl", "show", "--property=ActiveState", "--value", unit], timeout_s=10.0
        )
    except Exception:
        return None
    state = result.stdout.strip()
    if not result.ok or not state:
        return None
    return state in ("active", "activating", "reloading", "deactivating")


def _process_from(raw: dict[str, Any], boot_id: str, boot_time_s: float, ticks: int) -> GpuProcess:
    command = " ".join(raw["cmdline"]) or f"[{raw['comm']}]"
    return GpuProcess(
        identity=ProcIdentity(boot_id, int(raw["pid"]), int(raw["start_ticks"])),
        klass=raw["klass"],
        reason=raw["reason"],
        ppid=int(raw["ppid"]),
        state=raw["state"],
        user=raw["user"],
        uid=int(raw["uid"]),
        start_time_s=boot_time_s + raw["start_ticks"] / max(ticks, 1),
        command=redact_text(command),
        cgroup=raw["cgroup"],
        gpus=tuple(
            GpuMemoryShare(
                share.get("index"), share.get("used_memory_bytes"), share.get("sm_util_percent")
            )
            for share in raw["gpu"]
        ),
        pid_source=raw["pid_source"],
        hint_pid=raw.get("hint_pid"),
        parent_command=redact_text(raw.get("parent_command", "")),
    )


async def list_gpu_processes(
    host: Host, gpu: GpuHints, context: ClassifyContext, timeout_s: float = 30.0
) -> ProcListing:
    """Every GPU process on the host, classified; the unit's state is asked when unknown."""
    if context.unit and context.unit_active is None:
        from dataclasses import replace

        context = replace(context, unit_active=await unit_is_active(host, context.unit))
    hints = [
        {
            "pid": usage.pid,
            "gpu_index": usage.gpu_index,
            "used_memory_bytes": usage.used_memory_bytes,
            "sm_util_percent": usage.sm_util_percent,
        }
        for usage in usages_of(gpu)
    ]
    answer = await run_helper(
        host, {"op": "list", "hints": hints, **context.as_request()}, timeout_s
    )
    processes = tuple(
        _process_from(raw, answer["boot_id"], answer["boot_time_s"], answer["clock_ticks"])
        for raw in answer["processes"]
    )
    return ProcListing(
        host_label=host.label,
        boot_id=answer["boot_id"],
        taken_at_s=time.time(),
        processes=processes,
        notes=tuple(answer.get("notes", ())),
        euid=int(answer.get("euid", -1)),
        unit=context.unit,
        unit_active=context.unit_active,
    )
