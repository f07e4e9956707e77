"""A kill's one line says what GPU memory it freed, and unknown when nothing was read again.

A kill without a GPU re-read (the tune's leftover cleanup once had none) knows nothing of
the memory released: its line, quoted by the audit log and the handoff's Incidents,
must say so, never "0.00 GiB freed". A plain model: no process is involved.
"""

from __future__ import annotations

from tui.procs.model import KillOutcome, KillReport, ProcIdentity

GIB = 1024**3


def _outcome(pid: int, before: int | None, after: int | None) -> KillOutcome:
    return KillOutcome(
        ProcIdentity("boot", pid, pid * 10),
        "terminated",
        "ended",
        gpu_memory_before_bytes=before,
        gpu_memory_after_bytes=after,
    )


def test_memory_not_read_again_is_unknown_not_zero() -> None:
    report = KillReport("simulator", (_outcome(1, 84 * GIB, None), _outcome(2, 84 * GIB, None)))
    assert report.freed_bytes is None
    assert report.summary_line() == "simulator: 2 terminated; unknown GPU memory freed"


def test_memory_read_again_is_counted() -> None:
    report = KillReport("simulator", (_outcome(1, 84 * GIB, 0), _outcome(2, 16 * GIB, None)))
    assert report.freed_bytes == 84 * GIB
    assert report.summary_line() == "simulator: 2 terminated; 84.00 GiB GPU memory freed"
    assert (
        KillReport("simulator").summary_line()
        == "simulator: nothing to do; 0.00 GiB GPU memory freed"
    )
