"""Per-process GPU utilization from NVML's samples: what one read says about each pid.

`nvmlDeviceGetProcessUtilization(handle, lastSeenTimeStamp)` returns samples (pid, CPU
timestamp in microseconds, smUtil, memUtil) newer than the timestamp asked, and NOT_FOUND
when there are none. NVML documents a sample only for a process "that had some non-zero
utilization during the last sample period". So, on a GPU that answers, a process with no
sample in the window did no work on it: 0 %, stated only for a process that existed when
the read was made (started surely before it); a newer one is unknown until the next read.
A GPU that does not answer (NOT_SUPPORTED) has no read: every process on it is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# A percentage above this is a driver's garbage, not a measurement: that field is skipped.
_MAX_PERCENT = 100
# A process's start from /proc is the boot time (/proc/stat's btime, whole seconds) plus its
# start ticks: up to a second early. Only a start this much before a read proves it was there.
START_UNCERTAINTY_S = 1.0


@dataclass(frozen=True, slots=True)
class ProcessUtilRead:
    """One read of a GPU's per-process utilization: the mean of each pid's samples."""

    read_at_s: float  # wall clock of the read
    last_seen_us: int  # the newest sample's timestamp: the next read asks for what follows
    sm_percent_by_pid: dict[int, float] = field(default_factory=dict)
    memory_percent_by_pid: dict[int, float] = field(default_factory=dict)

    def figures(self, pid: int, started_at_s: float | None) -> tuple[float | None, float | None]:
        """(SM %, memory %) of a process on this GPU; None where the read says nothing."""
        sm = self.sm_percent_by_pid.get(pid)
        memory = self.memory_percent_by_pid.get(pid)
        if sm is not None or memory is not None:
            return sm, memory
        if started_at_s is not None and started_at_s + START_UNCERTAINTY_S < self.read_at_s:
            return 0.0, 0.0  # it existed through the read and NVML saw no work from it
        return None, None


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def averaged(samples: Iterable[Any], read_at_s: float, last_seen_us: int) -> ProcessUtilRead:
    """A read from NVML's samples (objects with pid, timeStamp, smUtil, memUtil)."""
    sm: dict[int, list[float]] = {}
    memory: dict[int, list[float]] = {}
    newest = last_seen_us
    for sample in samples:
        pid = int(sample.pid)
        newest = max(newest, int(sample.timeStamp))
        for values, figure in ((sm, int(sample.smUtil)), (memory, int(sample.memUtil))):
            bucket = values.setdefault(pid, [])
            if 0 <= figure <= _MAX_PERCENT:
                bucket.append(float(figure))
    return ProcessUtilRead(
        read_at_s=read_at_s,
        last_seen_us=newest,
        sm_percent_by_pid={pid: mean for pid, v in sm.items() if (mean := _mean(v)) is not None},
        memory_percent_by_pid={
            pid: mean for pid, v in memory.items() if (mean := _mean(v)) is not None
        },
    )
