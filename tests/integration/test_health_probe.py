"""The interconnect probe: the real script with torch's gloo backend on CPU, sent over a
real sshd the way it reaches a GPU box; its parser, the verdict, and the refusals.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli_support import cli_env, run  # noqa: F401  (fixture)
from tests.support.sim_fixtures import serving_box  # noqa: F401  (fixture)
from tests.support.sshd_fixtures import SshdPair
from tests.support.vllm_install import cache_root, ensure_vllm_venv
from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample
from tui.health.findings import CRIT, Finding
from tui.health.interconnect.probe import judge, parse_output, refusal, run_probe_script
from tui.health.interconnect.rules import InterconnectReport
from tui.hosts.local import LocalHost
from tui.hosts.ssh import SSHHost
from tui.sim.box import SimBox

GIB = 1024**3


def torch_python() -> str:
    """A Python with torch: SERVEDECK_PROBE_PYTHON, or the real-vLLM tier's cached venv
    (built, or waited for, when that tier is on, as in CI)."""
    chosen = os.environ.get("SERVEDECK_PROBE_PYTHON")
    if not chosen and os.environ.get("SERVEDECK_REAL_VLLM") == "1":
        return str(ensure_vllm_venv().python)
    path = Path(chosen) if chosen else cache_root() / "venv" / "bin" / "python"
    if not path.exists():
        pytest.skip(
            f"no Python with torch at {path} (python -m tests.support.vllm_install builds it)"
        )
    return str(path)


@pytest.mark.sshd
async def test_gloo_probe_over_ssh_measures_and_parses(sshd: SshdPair) -> None:
    python = torch_python()
    host = SSHHost(sshd.host_config())
    try:
        raw = await run_probe_script(
            host, python, ["--backend", "gloo", "--world", "3", "--max-bytes", str(64 * 1024)]
        )
    finally:
        await host.close()
    assert raw["backend"] == "gloo" and raw["world_size"] == 3 and "error" not in raw
    p2p = raw["p2p"]
    assert [[v is None for v in row] for row in p2p] == [  # type: ignore[union-attr]
        [True, False, False],
        [False, True, False],
        [False, False, True],
    ]
    rows = raw["allreduce"]
    assert [r["bytes"] for r in rows] == [8, 32, 128, 512, 2048, 8192, 32768]  # type: ignore[union-attr,index]
    for row in rows:  # type: ignore[union-attr]
        assert row["time_us"] > 0
        algbw = row["bytes"] / (row["time_us"] / 1e6) / 1e9
        assert row["algbw_gbps"] == pytest.approx(algbw, rel=0.02, abs=1e-6)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 4 / 3, rel=0.01, abs=1e-6)
    result = judge(raw, None).as_dict()
    assert result["interconnect_class"] == "pcie_gen5_x16"
    assert "small-message latency" in str(result["verdict"]) and "3 GPUs measured" in str(
        result["verdict"]
    )
    assert set(result) >= {"p2p", "allreduce", "reference", "verdict"}


async def test_probe_with_a_broken_python_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exited 1"):
        await run_probe_script(LocalHost(), "/bin/false", [])
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\ncat >/dev/null\necho 'Traceback: no module named torch'\n")
    fake.chmod(0o755)
    with pytest.raises(ValueError, match="no result"):
        await run_probe_script(LocalHost(), str(fake), [])
    with pytest.raises(ValueError):
        parse_output("@@servedeck:result\n{not json\n@@servedeck:result\n")


def _pcie_raw(busbw: float) -> dict[str, object]:
    rows = [
        {"bytes": b, "time_us": 30.0, "algbw_gbps": busbw * 8 / 14, "busbw_gbps": busbw}
        for b in (8, 32 * 1024, 256 * 1024**2, GIB)
    ]
    p2p = [[None if i == j else 54.0 for j in range(8)] for i in range(8)]
    return {"world_size": 8, "allreduce": rows, "p2p": p2p, "p2p_latency_us": p2p}


def test_verdict_names_the_gap_and_the_doctors_cause() -> None:
    doctor = InterconnectReport(
        findings=(Finding("acs", CRIT, 2, "0000:40:01.1 ACSCtl: ReqRedir+", "setpci"),)
    )
    slow = judge(_pcie_raw(22.0), doctor)
    assert "41% below the pcie_gen5_x16 reference (37-41 GB/s)" in slow.verdict
    assert "likely cause: acs (GPU2)" in slow.verdict
    fine = judge(_pcie_raw(39.5), InterconnectReport(findings=()))
    assert "at the pcie_gen5_x16 reference" in fine.verdict and "cause" not in fine.verdict
    nv = InterconnectReport(findings=(), topology=(("X", "NV18"), ("NV18", "X")))
    assert judge(_pcie_raw(300.0), nv).interconnect_class == "nvlink4"
    assert judge({"garbage": 1}, None).verdict == "no measurement"


def test_refusal_names_what_holds_each_gpu(serving_box: SimBox) -> None:  # noqa: F811
    snapshot = serving_box.snapshot()
    why = refusal(None, snapshot)
    assert why is not None and why.startswith("GPUs in use: GPU0 held by pid ")
    pid = snapshot.samples[0].processes[0].pid
    assert f"pid {pid} " in why
    assert refusal("vllm-kimi-k25-int4.service active", snapshot) == (
        "the service is active (vllm-kimi-k25-int4.service active): stop it first"
    )


def test_refusal_on_idle_and_unreadable_gpus() -> None:
    idle = GpuBoxSnapshot("nvml", 0.0, samples=(GpuSample(0, memory_used_bytes=500 * 1024**2),))
    assert refusal(None, idle) is None
    busy = GpuBoxSnapshot("nvml", 0.0, samples=(GpuSample(0, utilization_gpu_pct=97.0),))
    assert refusal(None, busy) == "GPUs in use: GPU0 busy (97% utilization)"
    hidden = GpuBoxSnapshot("nvml", 0.0, samples=(GpuSample(1, memory_used_bytes=80 * GIB),))
    assert "GPU1 holds 80.0 GiB" in str(refusal(None, hidden))
    held = GpuSample(0, processes=(GpuProcessUsage(4181, 0, 70 * GIB, "VLLM::Worker_TP0"),))
    assert "pid 4181 VLLM::Worker_TP0 (70.0 GiB)" in str(
        refusal(None, GpuBoxSnapshot("nvml", 0.0, samples=(held,)))
    )
    gone = GpuBoxSnapshot("nvml", 0.0, available=False, error="no NVIDIA driver")
    assert refusal(None, gone) == "GPUs unreadable: no NVIDIA driver"


def test_cli_probe_refuses_on_the_simulator(cli_env: dict[str, str]) -> None:  # noqa: F811
    result = run(cli_env, "probe", "--demo", "--yes")
    assert result.returncode == 3
    assert "probe refused on simulator" in result.stderr and "Traceback" not in result.stderr
