"""nvidia-smi parsing on realistic H200 output, and SmiGpuSource end to end on LocalHost.

The end-to-end tests put a fake `nvidia-smi` script first on PATH that prints the
fixture lines: a stand-in, because this machine has no NVIDIA GPU or driver. The
real tool is checked on a GPU machine by tests/perf/h200_verify.py.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.gpu.smi import SmiGpuSource
from tui.gpu.smi_parse import (
    MIB,
    QUERY_GPU_FIELDS,
    parse_compute_apps,
    parse_query_gpu_line,
    parse_query_gpu_static,
    parse_topo,
    parse_versions,
)
from tui.hosts.local import LocalHost

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "nvidia_smi"
QUERY_LINES = (FIXTURES / "handmade_8x_h200_query_gpu.csv").read_text().splitlines()


def test_query_line_loaded_h200() -> None:
    sample = parse_query_gpu_line(QUERY_LINES[0])
    assert sample is not None and sample.index == 0 and not sample.lost
    assert sample.memory_total_bytes == 143771 * MIB
    assert sample.memory_used_bytes == 118412 * MIB
    assert sample.utilization_gpu_pct == 100.0 and sample.utilization_memory_pct == 41.0
    assert sample.temperature_c == 44.0 and sample.power_w == pytest.approx(511.59)
    assert sample.power_limit_w == 700.0
    assert (sample.sm_clock_mhz, sample.memory_clock_mhz) == (1980, 3201)
    assert (sample.pcie_gen, sample.pcie_width) == (5, 16)
    static = parse_query_gpu_static(QUERY_LINES[0])
    assert static is not None and static.name == "NVIDIA H200"
    assert static.uuid == "GPU-3c8a1f52-9d1e-7b2a-51c4-0e6f8d2a9b11"
    assert static.bus_id == "00000000:19:00.0" and static.compute_capability == "9.0"
    assert (static.pcie_max_gen, static.pcie_max_width) == (5, 16)


def test_query_line_idle_gpu_and_all_lines_parse() -> None:
    idle = parse_query_gpu_line(QUERY_LINES[4])
    assert idle is not None and idle.index == 4 and idle.pcie_gen == 1
    assert idle.memory_used_bytes == 4 * MIB and idle.utilization_gpu_pct == 0.0
    assert all(parse_query_gpu_line(line) is not None for line in QUERY_LINES)


def test_query_line_not_available_markers_and_spaces() -> None:
    line = (
        "  3 ,NVIDIA GB10,GPU-x, 0000000F:01:00.0 , [N/A] , [Not Supported], 12, N/A, 51,"
        " [N/A], [N/A], 2418, [N/A], 3, 1, [N/A], [N/A], 12.1"
    )
    sample = parse_query_gpu_line(line)
    assert sample is not None and sample.index == 3
    assert sample.memory_total_bytes is None and sample.memory_used_bytes is None
    assert sample.utilization_gpu_pct == 12.0 and sample.utilization_memory_pct is None
    assert sample.power_w is None and sample.memory_clock_mhz is None
    assert parse_query_gpu_static(line).compute_capability == "12.1"  # type: ignore[union-attr]


def test_query_line_follows_the_given_field_order() -> None:
    fields = ("memory.used", "index", "temperature.gpu")
    sample = parse_query_gpu_line("2048, 5, 61", fields)
    assert sample is not None and sample.index == 5
    assert sample.memory_used_bytes == 2048 * MIB and sample.temperature_c == 61.0


def test_query_line_lost_gpu_and_garbage() -> None:
    lost = parse_query_gpu_line(
        "2, NVIDIA H200, GPU-y, 00000000:4C:00.0, " + ", ".join(["[GPU requires reset]"] * 14)
    )
    assert lost is not None and lost.lost and lost.index == 2
    assert parse_query_gpu_line("") is None
    assert (
        parse_query_gpu_line("Failed to initialize NVML: Driver/library version mismatch") is None
    )
    assert parse_query_gpu_line(",".join(["x"] * len(QUERY_GPU_FIELDS))) is None


def test_compute_apps() -> None:
    text = (FIXTURES / "handmade_8x_h200_compute_apps.csv").read_text()
    unmapped = parse_compute_apps(text)
    assert len(unmapped) == 5 and {p.gpu_index for p in unmapped} == {-1}
    index_by_uuid = {
        parse_query_gpu_static(line).uuid: i  # type: ignore[union-attr]
        for i, line in enumerate(QUERY_LINES[:8])
    }
    apps = parse_compute_apps(text + "garbage line\n\n", index_by_uuid)
    assert [(p.gpu_index, p.pid) for p in apps] == [
        (0, 81231), (1, 81232), (2, 81233), (3, 81234), (0, 80977)
    ]  # fmt: skip
    assert apps[0].used_memory_bytes == 118402 * MIB
    assert apps[0].process_name == "VLLM::Worker_TP0"
    # --query-compute-apps states no per-process utilization: unknown, never 0
    assert all(app.sm_util_percent is None for app in apps)
    # a process name with commas stays whole; an unknown uuid is skipped
    odd = parse_compute_apps("GPU-a, 7, [N/A], python -c x,y\nGPU-zz, 8, 1, p\n", {"GPU-a": 0})
    assert len(odd) == 1 and odd[0].process_name == "python -c x,y"
    assert odd[0].used_memory_bytes is None


def test_topo_h200() -> None:
    topo = parse_topo((FIXTURES / "handmade_8x_h200_topo_m.txt").read_text())
    assert len(topo.matrix) == 8 and all(len(row) == 8 for row in topo.matrix)
    assert topo.matrix[0][0] == "X" and topo.matrix[0][7] == "NV18"
    assert topo.numa_affinity == (0, 0, 0, 0, 1, 1, 1, 1)
    assert topo.cpu_affinity[0] == "0-47,96-143" and topo.cpu_affinity[7] == "48-95,144-191"


def test_topo_pcie_box_without_numa() -> None:
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tPHB\t0-15\tN/A\n"
        "GPU1\tPHB\t X \t0-15\tN/A\n"
    )
    topo = parse_topo(text)
    assert topo.matrix == (("X", "PHB"), ("PHB", "X"))
    assert topo.numa_affinity == (None, None)
    assert parse_topo("NVIDIA-SMI has failed").matrix == ()


def test_versions() -> None:
    assert parse_versions((FIXTURES / "handmade_8x_h200_version.txt").read_text()) == (
        "570.124.06",
        "12.8",
    )
    header = "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |"
    assert parse_versions(header) == ("550.54.15", "12.4")
    assert parse_versions("garbage") == (None, None)


@given(st.text())
def test_query_parser_never_raises(line: str) -> None:
    sample = parse_query_gpu_line(line)
    assert sample is None or sample.index >= 0
    parse_query_gpu_static(line)


@given(st.lists(st.text(alphabet=st.characters(), max_size=40), min_size=18, max_size=18))
def test_query_parser_never_raises_on_right_field_count(cells: list[str]) -> None:
    line = ",".join(cell.replace(",", ";").replace("\n", " ") for cell in cells)
    parse_query_gpu_line(line)
    parse_query_gpu_static(line)


@given(st.text())
def test_compute_apps_and_topo_never_raise(text: str) -> None:
    for usage in parse_compute_apps(text, {"GPU-a": 0}):
        assert usage.pid > 0
    parse_compute_apps(text)
    parse_topo(text)
    parse_versions(text)


# -- end to end with a fake nvidia-smi on PATH --------------------------------------


async def _poll(source: SmiGpuSource, predicate, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while True:
        snapshot = await source.sample()
        if predicate(snapshot) or time.monotonic() > deadline:
            return snapshot
        await asyncio.sleep(0.1)


async def test_source_end_to_end(fake_smi: Path) -> None:
    source = SmiGpuSource(LocalHost(), interval_s=0.2, apps_interval_s=0.2)
    try:
        snapshot = await _poll(
            source, lambda s: s.topology and s.driver_version and s.processes() and s.gpu_count == 8
        )
        assert snapshot.available and snapshot.source == "nvidia-smi"
        assert snapshot.gpu_count == 8 and snapshot.driver_version == "570.124.06"
        assert snapshot.cuda_version == "12.8"
        assert [s.numa_node for s in snapshot.statics] == [0, 0, 0, 0, 1, 1, 1, 1]
        assert snapshot.statics[0].nvlink_active_links == 18
        assert snapshot.topology[3][4] == "NV18"
        assert {p.pid for p in snapshot.samples[0].processes} == {81231, 80977}
        assert snapshot.samples[0].memory_used_bytes == 118412 * MIB
        assert snapshot.samples[5].processes == ()
    finally:
        await source.aclose()
    calls = (fake_smi / "calls.log").read_text()
    assert "-lms 200" in calls


async def test_stream_is_restarted_when_it_ends(
    fake_smi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SMI_STREAM_ONCE", "1")
    source = SmiGpuSource(LocalHost(), interval_s=0.2, restart_backoff_s=(0.05,))
    try:
        snapshot = await _poll(source, lambda s: source.stream_starts >= 3)
        assert source.stream_starts >= 3
        assert snapshot.available and snapshot.gpu_count == 8
    finally:
        await source.aclose()


async def test_no_nvidia_smi_means_no_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH at all
    source = SmiGpuSource(LocalHost(), interval_s=0.2, restart_backoff_s=(5.0,))
    try:
        snapshot = await source.sample()
        assert not snapshot.available
        assert snapshot.error == "no NVIDIA driver (nvidia-smi not found)"
    finally:
        await source.aclose()


# --- output captured on a real 2x H200 machine (driver 580.159.04, CUDA 13.0) ------------


def test_real_h200_capture_parses_every_line() -> None:
    """`nvidia-smi --query-gpu ... -lms` lines captured while a 4 GiB CUDA process ran on GPU 0."""
    lines = (FIXTURES / "h200_query_gpu.csv").read_text().splitlines()
    samples = [parse_query_gpu_line(line) for line in lines]
    assert all(sample is not None for sample in samples) and len(samples) >= 4
    first = samples[0]
    assert first is not None
    assert first.index == 0 and first.memory_total_bytes == 143771 * 1024**2
    assert first.memory_used_bytes == 4623 * 1024**2
    assert first.power_limit_w == 700.0 and first.pcie_gen == 5 and first.pcie_width == 16
    static = parse_query_gpu_static(lines[0], QUERY_GPU_FIELDS)
    assert (
        static is not None and static.name == "NVIDIA H200" and static.compute_capability == "9.0"
    )


def test_real_h200_compute_apps_topology_and_versions() -> None:
    apps = parse_compute_apps((FIXTURES / "h200_compute_apps.csv").read_text())
    assert [(app.pid, app.used_memory_bytes) for app in apps] == [(575, 4614 * 1024**2)]
    topo = parse_topo((FIXTURES / "h200_topo_m.txt").read_text())
    assert topo.matrix == (("X", "NV18"), ("NV18", "X"))
    assert parse_versions((FIXTURES / "h200_version.txt").read_text()) == ("580.159.04", "13.0")


async def test_first_sample_waits_for_a_whole_tick(
    fake_smi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream prints GPUs one line at a time: the first snapshot must hold all eight."""
    monkeypatch.setenv("FAKE_SMI_LINE_DELAY", "0.05")
    source = SmiGpuSource(LocalHost(), interval_s=0.25)
    try:
        snapshot = await source.sample()
    finally:
        await source.aclose()
    assert snapshot.available and snapshot.gpu_count == 8
