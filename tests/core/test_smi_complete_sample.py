"""One-shot consumers of nvidia-smi (`procs`, `kill`, `summary` over SSH) take the first
sample only: it must carry the process list of its tick, not just the GPU lines (issue 16).
The fake nvidia-smi on PATH is a real process replaying captured output (no GPU here).
"""

from __future__ import annotations

from pathlib import Path

from tui.gpu.smi import SmiGpuSource
from tui.hosts.local import LocalHost


async def test_the_first_sample_has_the_process_list(fake_smi: Path) -> None:
    source = SmiGpuSource(LocalHost(), interval_s=0.2, apps_interval_s=30.0)
    try:
        snapshot = await source.sample()
    finally:
        await source.aclose()
    assert snapshot.available and snapshot.gpu_count == 8
    assert {p.pid for p in snapshot.samples[0].processes} == {81231, 80977}


async def test_a_failing_process_query_does_not_hold_the_first_sample(
    fake_smi: Path,
) -> None:
    script = fake_smi / "bin" / "nvidia-smi"
    script.write_text(
        script.read_text().replace(
            '*--query-compute-apps*) cat "$FAKE_SMI_DIR/handmade_8x_h200_compute_apps.csv" ;;',
            "*--query-compute-apps*) echo 'Failed to initialize NVML' >&2; exit 9 ;;",
        )
    )
    source = SmiGpuSource(LocalHost(), interval_s=0.2, first_sample_timeout_s=20.0)
    try:
        snapshot = await source.sample()
    finally:
        await source.aclose()
    assert snapshot.available and snapshot.gpu_count == 8
    assert snapshot.processes() == ()
