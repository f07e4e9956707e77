"""The interconnect doctor: each rule on fixtures in the real tools' formats, the simulated
box with one fault at a time, the collection script through real hosts, and the CLI contract.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from tests.support.cli_support import assert_fits, cli_env, run  # noqa: F401  (fixture)
from tests.support.sshd_fixtures import SshdPair
from tui.health.findings import CRIT, INFO, WARN, Finding
from tui.health.interconnect.doctor_run import run_interconnect
from tui.health.interconnect.parse import norm_bdf, split_sections
from tui.health.interconnect.rules import analyze_interconnect
from tui.hosts.local import LocalHost
from tui.hosts.ssh import SSHHost
from tui.sim.interconnect import InterconnectFaults, faults_from_text, render_sections

FIX = Path(__file__).parents[1] / "support" / "fixtures" / "interconnect"
LINKS_IDLE = "0, 00000000:43:00.0, 1, 5, 16, 16, 0\n1, 00000000:44:00.0, 1, 5, 16, 16, 0"
LINKS_BUSY = "0, 00000000:43:00.0, 5, 5, 16, 16, 93\n1, 00000000:44:00.0, 1, 5, 16, 16, 91"
ALLREDUCE_LINE = (
    "(VllmWorker rank=3 pid=4181) WARNING 11-29 16:31:28 [custom_all_reduce.py:137] Custom "
    "allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To "
    "silence this warning, specify disable_custom_all_reduce=True explicitly."
)


def fixture(name: str) -> str:
    return (FIX / name).read_text()


def box(**sections: str) -> dict[str, str]:
    """A two-GPU box behind a PCIe switch, idle, clean; sections override."""
    base = {
        "uid": "0",
        "links": LINKS_IDLE,
        "paths": fixture("gpu_paths.txt"),
        "lspci": fixture("lspci_vvv_acs_off.txt"),
        "memory": fixture("nvidia_smi_q_memory_bar1_128g.txt"),
        "cmdline": "BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=1 ro quiet splash",
        "iommu_groups": "0",
        "uvm": "Y",
        "aspm": "[default] performance powersave powersupersave",
    }
    return {**base, **sections}


def findings(sections: dict[str, str], check: str | None = None) -> list[Finding]:
    found = list(analyze_interconnect(sections).findings)
    return [f for f in found if check is None or f.check == check]


def test_clean_box_has_no_finding() -> None:
    assert findings(box()) == []


def test_p2p_matrix_with_cns_is_flagged_ok_is_not() -> None:
    cns = findings(box(p2p_r=fixture("topo_p2p_r_cns.txt")), "p2p_read")
    assert len(cns) == 1 and cns[0].severity == WARN and cns[0].gpu is None
    assert "GPU0-GPU2=CNS (chipset not supported)" in cns[0].evidence
    assert "GPU0-GPU1" not in cns[0].evidence
    assert findings(box(p2p_r=fixture("topo_p2p_r_ok.txt"))) == []


def test_acs_redirect_on_one_switch_port_names_that_bridge_and_gpu() -> None:
    (acs,) = findings(box(lspci=fixture("lspci_vvv_acs_on.txt")), "acs")
    assert acs.severity == CRIT and acs.gpu == 1
    assert acs.evidence.startswith("0000:42:01.0 (above GPU1) ACSCtl:")
    assert "ReqRedir+ CmpltRedir+" in acs.evidence
    assert "setpci -s 0000:42:01.0 ECAP_ACS+0x6.w=0000" in acs.fix


def test_acs_unreadable_without_root_says_so() -> None:
    (acs,) = findings(box(uid="1000", lspci=fixture("lspci_vvv_nonroot.txt")), "acs")
    assert acs.severity == INFO and "uid 1000" in acs.evidence and "<access denied>" in acs.evidence
    assert "root" in acs.fix


def test_no_lspci_is_an_info_not_a_crash() -> None:
    (acs,) = findings(box(lspci="lspci: not found"), "acs")
    assert acs.severity == INFO and "pciutils" in acs.fix


@pytest.mark.parametrize(
    ("cmdline", "groups", "flagged"),
    [
        ("BOOT_IMAGE=/vmlinuz ro intel_iommu=on", "112", True),
        ("BOOT_IMAGE=/vmlinuz ro amd_iommu=on iommu=pt", "96", False),
        ("BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu.passthrough=1", "96", False),
        ("BOOT_IMAGE=/vmlinuz ro quiet", "0", False),
        ("BOOT_IMAGE=/vmlinuz ro intel_iommu=on,sm_on", "112", True),
    ],
)
def test_iommu_mode_from_cmdline(cmdline: str, groups: str, flagged: bool) -> None:
    found = findings(box(cmdline=cmdline, iommu_groups=groups), "iommu")
    assert bool(found) == flagged
    if flagged:
        assert "without iommu=pt" in found[0].evidence and "iommu=pt" in found[0].fix


def test_iommu_group_type_names_the_translated_gpu() -> None:
    types = "0000:43:00.0 identity\n0000:44:00.0 DMA-FQ"
    (iommu,) = findings(box(iommu_type=types, iommu_groups="96"), "iommu")
    assert iommu.gpu == 1 and "0000:44:00.0/iommu_group/type = DMA-FQ" in iommu.evidence
    assert findings(box(iommu_type="0000:43:00.0 identity\n0000:44:00.0 identity")) == []


def test_small_bar1_is_flagged_per_gpu_with_its_bdf() -> None:
    bar1 = findings(box(memory=fixture("nvidia_smi_q_memory_bar1_256m.txt")), "bar1")
    assert [(f.gpu, f.evidence.split()[0]) for f in bar1] == [
        (0, "0000:43:00.0"),
        (1, "0000:44:00.0"),
    ]
    assert "BAR1 Total : 256 MiB < FB Total : 97887 MiB" in bar1[0].evidence
    assert "Resizable BAR" in bar1[0].fix


def test_gen1_link_only_flagged_under_load() -> None:
    assert findings(box(links=LINKS_IDLE)) == []
    (link,) = findings(box(links=LINKS_BUSY), "pcie_link")
    assert link.gpu == 1
    assert link.evidence == "0000:44:00.0 Gen1 x16 (max Gen5 x16) at 91% utilization"


def test_module_parameters() -> None:
    (hmm,) = findings(box(uvm="N"), "uvm_hmm")
    assert hmm.evidence.endswith("uvm_disable_hmm = N") and "uvm_disable_hmm=1" in hmm.fix
    assert findings(box(uvm="")) == []  # module not loaded: nothing to say
    aspm = "default performance [powersave] powersupersave"
    assert findings(box(aspm=aspm), "pcie_aspm")[0].evidence.endswith(aspm)
    assert findings(box(aspm=aspm, cmdline="ro pcie_aspm=off")) == []


def test_serving_process_on_the_wrong_numa_node() -> None:
    topo = (
        "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \tSYS\t0-63,128-191\t0\t\tN/A\n"
        "GPU1\tSYS\t X \t64-127,192-255\t1\t\tN/A\n"
    )
    apps = "4181, 00000000:43:00.0\n4182, 00000000:44:00.0"
    cpus = "4181 0-63,128-191\n4182 0-63"
    (numa,) = findings(box(topo=topo, apps=apps, cpus=cpus), "numa")
    assert numa.gpu == 1 and "pid 4182 Cpus_allowed_list 0-63" in numa.evidence
    report = analyze_interconnect(box(topo=topo))
    assert report.numa_nodes == (0, 1)


def test_log_lines_custom_allreduce_and_nccl_shm() -> None:
    shm = "node1:4181:4390 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via SHM/direct/direct"
    p2p = "node1:4181:4390 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM"
    found = findings(box(log="\n".join([ALLREDUCE_LINE, p2p, shm])))
    assert [(f.check, f.severity) for f in found] == [
        ("nccl_transport", WARN),
        ("custom_allreduce", INFO),
    ]
    assert found[0].evidence.startswith(shm) and found[1].evidence == ALLREDUCE_LINE
    assert findings(box(log=p2p)) == []


def test_garbage_everywhere_never_raises() -> None:
    garbage = "\x00\xff}{ GPU0\tGPU1\n GPU0 X\n0000:zz:00.0 PCI bridge\n\tACSCtl:\t+\n"
    sections = dict.fromkeys(box(), garbage) | {"links": "0, 0000:zz, x, y, 16, 16, 99"}
    analyze_interconnect(sections)
    assert analyze_interconnect({}).findings == ()
    assert split_sections(garbage) == {}
    assert norm_bdf("PCI:0000:41:00") == "0000:41:00.0"
    assert norm_bdf("00000000:41:00.0") == norm_bdf("0000:41:00.0")


# -- the simulated box -----------------------------------------------------------------


def sim_findings(faults: InterconnectFaults, util: float = 90.0) -> list[Finding]:
    text = render_sections(faults, [util] * 8, [ALLREDUCE_LINE])
    return [f for f in analyze_interconnect(split_sections(text)).findings if f.severity != INFO]


def test_sim_clean_box_loaded_or_idle_has_no_false_finding() -> None:
    assert sim_findings(InterconnectFaults(), 90.0) == []
    assert sim_findings(InterconnectFaults(), 0.0) == []


@pytest.mark.parametrize(
    ("faults", "check", "gpu", "evidence", "fix"),
    [
        ("acs=2", "acs", 2, "0000:40:01.1 (above GPU2)", "setpci -s 0000:40:01.1"),
        ("iommu", "iommu", None, "DMA-FQ", "iommu=pt"),
        ("downtrain=5", "pcie_link", 5, "0000:a1:00.0 Gen1 x16 (max Gen5 x16)", "reseat"),
        ("bar1=3", "bar1", 3, "0000:61:00.0 BAR1 Total : 256 MiB", "Resizable BAR"),
        ("hmm", "uvm_hmm", None, "uvm_disable_hmm = N", "uvm_disable_hmm=1"),
    ],
)
def test_sim_each_fault_is_flagged_on_the_right_gpu(
    faults: str, check: str, gpu: int | None, evidence: str, fix: str
) -> None:
    (found,) = sim_findings(faults_from_text(faults))
    assert (found.check, found.gpu) == (check, gpu)
    assert evidence in found.evidence and fix in found.fix


def test_sim_downtrained_link_while_idle_is_not_flagged() -> None:
    assert sim_findings(faults_from_text("downtrain=5"), util=0.0) == []


# -- the collection script through real hosts -------------------------------------------

FAKE_TOOL = """#!/bin/sh
# Stands in for a tool this CI machine lacks (no NVIDIA driver, no GPUs): prints a fixture.
case "$*" in
  "topo -p2p r"|"topo -p2p w") cat "{fix}/topo_p2p_r_cns.txt" ;;
  "-q -d MEMORY") cat "{fix}/nvidia_smi_q_memory_bar1_256m.txt" ;;
  --query-gpu=*) printf '0, 00000000:43:00.0, 5, 5, 16, 16, 80\\n1, 00000000:44:00.0, 2, 5, 16, 16, 85\\n' ;;
  "-D -vvv") cat "{fix}/lspci_vvv_acs_on.txt" ;;
  *) exit 0 ;;
esac
"""


def _fake_tools(folder: Path) -> Path:
    folder.mkdir()
    for name in ("nvidia-smi", "lspci"):
        path = folder / name
        path.write_text(FAKE_TOOL.format(fix=FIX))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


async def test_collection_script_through_a_local_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real script under /bin/sh, with nvidia-smi and lspci replaced by fixture printers."""
    tools = _fake_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    report = await run_interconnect(LocalHost(), None)
    checks = {(f.check, f.gpu) for f in report.findings}
    assert {("p2p_read", None), ("p2p_write", None), ("bar1", 0), ("bar1", 1)} <= checks
    assert ("pcie_link", 1) in checks and ("pcie_link", 0) not in checks
    assert report.gpu_bus_ids == ("0000:43:00.0", "0000:44:00.0")


@pytest.mark.sshd
async def test_doctor_over_ssh_is_read_only_and_fast(sshd: SshdPair) -> None:
    """This machine has no NVIDIA driver: the doctor says so, in well under 5 s."""
    host = SSHHost(sshd.host_config())
    try:
        await host.run(["true"])  # connect first: the budget is for the checks
        started = time.monotonic()
        report = await run_interconnect(host, None)
        took_s = time.monotonic() - started
    finally:
        await host.close()
    print(f"doctor --interconnect over ssh: {took_s:.2f} s")
    assert took_s < 5.0, f"took {took_s:.1f} s"
    assert "no GPU link data" in " ".join(report.notes)


async def test_unreachable_host_is_a_finding_not_a_traceback() -> None:
    from tests.support.cli_support import closed_port
    from tui.core.config import HostConfig
    from tui.hosts.ssh import SSHHost as Ssh

    host = Ssh(
        HostConfig(kind="ssh", hostname="127.0.0.1", port=closed_port(), connect_timeout_s=3)
    )
    try:
        report = await run_interconnect(host, None)
    finally:
        await host.close()
    assert report.findings and report.findings[0].check == "host"


# -- the CLI contract --------------------------------------------------------------------


def test_cli_demo_json_contract(cli_env: dict[str, str]) -> None:  # noqa: F811
    env = cli_env | {"SERVEDECK_SIM_INTERCONNECT": "acs=2,bar1=3"}
    result = run(env, "doctor", "--interconnect", "--demo", "--json")
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert {tuple(sorted(f)) for f in data["findings"]} == {
        ("check", "evidence", "fix", "gpu", "severity")
    }
    assert [(f["check"], f["gpu"]) for f in data["findings"]] == [("acs", 2), ("bar1", 3)]
    assert len(data["gpus"]) == 8 and data["gpus"][4]["numa_node"] == 1


def test_cli_demo_clean_box_text(cli_env: dict[str, str]) -> None:  # noqa: F811
    result = run(cli_env, "doctor", "--interconnect", "--demo")
    assert result.returncode == 0, result.stderr
    assert "verdict: no interconnect problem found" in result.stdout
    assert "Traceback" not in result.stderr
    env = cli_env | {"SERVEDECK_SIM_INTERCONNECT": "acs=2,iommu,downtrain=5,bar1=3,hmm"}
    faulty = run(env, "doctor", "--interconnect", "--demo")
    assert faulty.returncode == 1 and "verdict: 4 problem(s)" in faulty.stdout, faulty.stdout
    assert_fits(faulty.stdout, "doctor --interconnect")
