"""What the process helper reports, as frozen dataclasses the rest of servedeck reads."""

from __future__ import annotations

from dataclasses import dataclass

CLASSES = ("service", "leftover", "suspect", "defunct", "foreign")
# Classes a bulk cleanup or a plain `kill PID` offers without a typed confirmation.
OFFERED_CLASSES = ("leftover",)
# Classes signalled only after the operator typed the pid: not the service's (foreign), or
# matching its patterns without a proof it is the service's (suspect).
CONFIRM_CLASSES = ("foreign", "suspect")


@dataclass(frozen=True, slots=True, order=True)
class ProcIdentity:
    """One process incarnation: a pid is reused, (boot, pid, start time) never is."""

    boot_id: str
    pid: int
    start_ticks: int


@dataclass(frozen=True, slots=True)
class GpuMemoryShare:
    """What one GPU's driver says of the process: its memory and its share of the SMs."""

    gpu_index: int | None
    used_memory_bytes: int | None
    sm_util_percent: float | None = None  # None: the GPU or its source does not say


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process holding GPU memory (or /dev/nvidia*), verified in /proc and classified."""

    identity: ProcIdentity
    klass: str  # one of CLASSES
    reason: str
    ppid: int
    state: str
    user: str
    uid: int
    start_time_s: float  # wall clock, seconds since the epoch
    command: str  # redacted
    cgroup: str
    gpus: tuple[GpuMemoryShare, ...] = ()
    # direct | nspid (NVML gave a namespace pid) | device | pattern / port (holds no GPU)
    pid_source: str = "direct"
    hint_pid: int | None = None
    parent_command: str = ""  # redacted; for defunct ones: who must reap it

    @property
    def pid(self) -> int:
        return self.identity.pid

    @property
    def gpu_memory_bytes(self) -> int | None:
        known = [share.used_memory_bytes for share in self.gpus if share.used_memory_bytes]
        return sum(known) if known else None

    @property
    def sm_util_percent(self) -> float | None:
        """Its busiest GPU's SM share; None with no GPU, or when any of its GPUs does not
        say (an unknown GPU could be the busy one)."""
        figures = [share.sm_util_percent for share in self.gpus]
        if not figures or any(figure is None for figure in figures):
            return None
        return max(figure for figure in figures if figure is not None)

    @property
    def gpu_indices(self) -> tuple[int, ...]:
        return tuple(sorted({s.gpu_index for s in self.gpus if s.gpu_index is not None}))

    def age_s(self, now_s: float) -> float:
        return max(0.0, now_s - self.start_time_s)


@dataclass(frozen=True, slots=True)
class ProcListing:
    """Every GPU process on one host at one instant."""

    host_label: str
    boot_id: str
    taken_at_s: float
    processes: tuple[GpuProcess, ...] = ()
    notes: tuple[str, ...] = ()
    euid: int = -1
    unit: str | None = None
    unit_active: bool | None = None

    def of_class(self, *classes: str) -> tuple[GpuProcess, ...]:
        return tuple(proc for proc in self.processes if proc.klass in classes)

    def find(self, pid: int) -> GpuProcess | None:
        return next((proc for proc in self.processes if proc.pid == pid), None)


@dataclass(frozen=True, slots=True)
class KillOutcome:
    """What happened to one target: terminated, killed, stuck, gone or refused."""

    identity: ProcIdentity
    outcome: str
    detail: str
    signals: tuple[str, ...] = ()
    method: str | None = None  # pidfd | kill-after-recheck
    gpu_memory_before_bytes: int | None = None
    gpu_memory_after_bytes: int | None = None

    @property
    def ended(self) -> bool:
        return self.outcome in ("terminated", "killed")

    @property
    def freed_bytes(self) -> int | None:
        if self.gpu_memory_before_bytes is None or self.gpu_memory_after_bytes is None:
            return None
        return max(0, self.gpu_memory_before_bytes - self.gpu_memory_after_bytes)


@dataclass(frozen=True, slots=True)
class KillReport:
    host_label: str
    outcomes: tuple[KillOutcome, ...] = ()
    gpu_used_before_bytes: int | None = None
    gpu_used_after_bytes: int | None = None

    @property
    def freed_bytes(self) -> int | None:
        """GPU memory attributed to the targets that is no longer attributed to them; None
        when no target's memory was read again after the kill (unknown, never 0)."""
        known = [o.freed_bytes for o in self.outcomes if o.freed_bytes is not None]
        if self.outcomes and not known:
            return None
        return sum(known)

    @property
    def all_ended(self) -> bool:
        return all(o.ended for o in self.outcomes)

    def summary_line(self) -> str:
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        parts = ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))
        freed = self.freed_bytes
        gib = "unknown" if freed is None else f"{freed / 1024**3:.2f} GiB"
        return f"{self.host_label}: {parts or 'nothing to do'}; {gib} GPU memory freed"
