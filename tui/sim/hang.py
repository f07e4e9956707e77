"""The simulator's hangs on demand: each kind of stall the progress verdict tells apart.

POST /_sim/fault {"hang": KIND} (KIND: "spin", "cpu", "slow" or "" to end it) and
{"stop_rank": R} (SIGSTOP worker rank R, a real process; null sends SIGCONT). Checked
each activity tick (0.5 s): while any rank is stopped or gone, or a spin or CPU hang is
on, the scheduler makes no step, as a collective missing one rank makes none.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence

from tui.sim.procs import process_state

HANGS = ("", "spin", "cpu", "slow")
SLOW_FACTOR = 8.0  # "slow": every step lasts this many times longer
SHM_WARNING_AFTER_S = 60.0  # vLLM's shared-memory broadcast warns after 60 s without a block
SHM_WARNING = "No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation)"


class HangState:
    """Applies the faults to the rank processes and says what the engine and GPUs do."""

    def __init__(self) -> None:
        self.stopped_pid: int | None = None
        self.cpu_hang_since_s: float | None = None
        self.warned = False

    def apply_stop(self, stop_rank: int | None, worker_pids: Sequence[int]) -> None:
        """SIGSTOP the asked rank (SIGCONT the one stopped before when it changes)."""
        wanted = (
            worker_pids[stop_rank]
            if stop_rank is not None and 0 <= stop_rank < len(worker_pids)
            else None
        )
        if wanted == self.stopped_pid:
            return
        with contextlib.suppress(OSError):
            if self.stopped_pid is not None:
                os.kill(self.stopped_pid, signal.SIGCONT)
        self.stopped_pid = wanted
        with contextlib.suppress(OSError):
            if wanted is not None:
                os.kill(wanted, signal.SIGSTOP)

    @staticmethod
    def rank_missing(pids: Sequence[int]) -> bool:
        """A rank stopped (by us or anyone), a zombie or gone: the collective cannot complete."""
        return any(process_state(pid) in (None, "T", "t", "Z", "X") for pid in pids)

    def shm_warning_due(self, hang: str) -> bool:
        """True once, 60 s into a CPU-side hang: the line vLLM writes then."""
        if hang != "cpu":
            self.cpu_hang_since_s, self.warned = None, False
            return False
        now = time.monotonic()
        if self.cpu_hang_since_s is None:
            self.cpu_hang_since_s = now
        if not self.warned and now - self.cpu_hang_since_s >= SHM_WARNING_AFTER_S:
            self.warned = True
            return True
        return False
