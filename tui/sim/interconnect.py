"""The simulated box's interconnect, printed in the real tools' formats.

The demo and the tests feed this text through the same parsers and rules as a
real host's, so a fault set here (ACS on one bridge, IOMMU translating, a link
downtrained under load, a small BAR1, HMM left on) is found the real way.
Faults for the demo come from SERVEDECK_SIM_INTERCONNECT, e.g.
`acs=2,iommu,downtrain=5,bar1=3,hmm,nonroot`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from tui.health.interconnect.parse import SECTION_MARK
from tui.sim import spec

MIB = 1024**2
ENV_FAULTS = "SERVEDECK_SIM_INTERCONNECT"


@dataclass(frozen=True, slots=True)
class InterconnectFaults:
    acs_gpu: int | None = None  # ACS redirect on the root port above this GPU
    iommu: bool = False  # IOMMU in translation mode (intel_iommu=on, no iommu=pt)
    downtrain_gpu: int | None = None  # this GPU's link stays at Gen1 even under load
    small_bar1_gpu: int | None = None  # 256 MiB BAR1 on this GPU
    hmm: bool = False  # nvidia_uvm uvm_disable_hmm=N
    nonroot: bool = False  # lspci run as a normal user: no ACS control visible


def faults_from_text(text: str) -> InterconnectFaults:
    """`acs=2,iommu,...` to faults; unknown words are ignored (the demo must start)."""
    values: dict[str, object] = {}
    for word in (w.strip() for w in text.split(",")):
        key, _, number = word.partition("=")
        if key in ("acs", "downtrain", "bar1") and number.isdigit():
            name = {"acs": "acs_gpu", "downtrain": "downtrain_gpu", "bar1": "small_bar1_gpu"}[key]
            values[name] = int(number)
        elif key in ("iommu", "hmm", "nonroot"):
            values[key] = True
    return InterconnectFaults(**values)  # type: ignore[arg-type]


def faults_from_env() -> InterconnectFaults:
    return faults_from_text(os.environ.get(ENV_FAULTS, ""))


def _bus(index: int) -> int:
    return int(spec.GPU_BUS_IDS[index].split(":")[1], 16)


def _matrix_text(cells: Sequence[Sequence[str]]) -> str:
    n = len(cells)
    head = "\t\x1b[4m" + "\t".join(f"GPU{i}" for i in range(n)) + "\x1b[0m"
    rows = [f" GPU{i}\t" + "\t".join(row) + "\t" for i, row in enumerate(cells)]
    legend = (
        "\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n  CNS  = Chipset not supported\n"
        "  GNS  = GPU not supported\n  TNS  = Topology not supported\n  NS   = Not supported\n"
        "  U    = Unknown"
    )
    return "\n".join([head, *rows, legend])


def _topo_text(n: int) -> str:
    numa = [spec.GPU_NUMA_NODES[i % len(spec.GPU_NUMA_NODES)] for i in range(n)]
    matrix = spec.topology_matrix(tuple(numa))
    cpus = {0: "0-63,128-191", 1: "64-127,192-255"}
    head = "\t\x1b[4m" + "\t".join(f"GPU{i}" for i in range(n))
    head += "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m"
    rows = [
        f"GPU{i}\t"
        + "\t".join(" X " if c == "X" else c for c in matrix[i])
        + f"\t{cpus[numa[i]]}\t{numa[i]}\t\tN/A"
        for i in range(n)
    ]
    return "\n".join([head, *rows, "", "Legend:", "", "  X    = Self"])


def _lspci_text(n: int, faults: InterconnectFaults) -> str:
    blocks = []
    for i in range(n):
        bus = _bus(i)
        port = f"0000:{bus - 1:02x}:01.1"
        redirect = "+" if faults.acs_gpu == i else "-"
        caps = (
            "\tCapabilities: <access denied>"
            if faults.nonroot
            else (
                "\tCapabilities: [2a0 v1] Access Control Services\n"
                "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ "
                "EgressCtrl- DirectTrans-\n"
                f"\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir{redirect} CmpltRedir{redirect} "
                "UpstreamFwd+ EgressCtrl- DirectTrans-"
            )
        )
        blocks.append(
            f"{port} PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge "
            "(prog-if 00 [Normal decode])\n"
            "\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- "
            "SERR+ FastB2B- DisINTx+\n"
            f"\tBus: primary={bus - 1:02x}, secondary={bus:02x}, subordinate={bus:02x}, "
            f"sec-latency=0\n{caps}\n\tKernel driver in use: pcieport\n"
        )
        blocks.append(
            f"0000:{bus:02x}:00.0 3D controller: NVIDIA Corporation Device 2bb5 (rev a1)\n"
            "\tSubsystem: NVIDIA Corporation Device 204e\n"
            + ("\tCapabilities: <access denied>\n" if faults.nonroot else "")
            + "\tKernel driver in use: nvidia\n\tKernel modules: nvidia\n"
        )
    return "\n".join(blocks)


def _memory_text(n: int, faults: InterconnectFaults) -> str:
    total = spec.GPU_MEMORY_TOTAL_BYTES // MIB
    out = [
        "",
        "==============NVSMI LOG==============",
        "",
        "Timestamp                                 : Mon Nov 30 16:20:18 2026",
        f"Driver Version                            : {spec.DRIVER_VERSION}",
        f"CUDA Version                              : {spec.CUDA_VERSION}",
        "",
        f"Attached GPUs                             : {n}",
    ]
    for i in range(n):
        bar1 = 256 if faults.small_bar1_gpu == i else 131072
        out += [
            f"GPU {spec.GPU_BUS_IDS[i]}",
            "    FB Memory Usage",
            f"        Total                             : {total} MiB",
            "        Reserved                          : 645 MiB",
            "        Used                              : 0 MiB",
            f"        Free                              : {total - 645} MiB",
            "    BAR1 Memory Usage",
            f"        Total                             : {bar1} MiB",
            "        Used                              : 1 MiB",
            f"        Free                              : {bar1 - 1} MiB",
            "",
        ]
    return "\n".join(out)


def render_sections(
    faults: InterconnectFaults,
    utilization_pct: Sequence[float],
    log_lines: Sequence[str] = (),
    gpu_count: int = spec.GPU_COUNT,
) -> str:
    """The collection script's output for the simulated box (same markers, same formats)."""
    n = gpu_count
    p2p = [["X" if i == j else "OK" for j in range(n)] for i in range(n)]
    links = []
    for i in range(n):
        util = utilization_pct[i] if i < len(utilization_pct) else 0.0
        gen = 1 if faults.downtrain_gpu == i or util < 1.0 else 5
        links.append(f"{i}, {spec.GPU_BUS_IDS[i]}, {gen}, 5, 16, 16, {util:.0f}")
    cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.8.12-4-pve root=/dev/mapper/pve-root ro quiet"
    cmdline += " amd_iommu=on" if faults.iommu else " iommu=pt"
    sections = {
        "uid": "1000" if faults.nonroot else "0",
        "p2p_r": _matrix_text(p2p),
        "p2p_w": _matrix_text(p2p),
        "topo": _topo_text(n),
        "links": "\n".join(links),
        "memory": _memory_text(n, faults),
        "apps": "",
        "paths": "\n".join(
            f"0000:{_bus(i):02x}:00.0 /sys/devices/pci0000:{_bus(i) - 1:02x}/"
            f"0000:{_bus(i) - 1:02x}:01.1/0000:{_bus(i):02x}:00.0"
            for i in range(n)
        ),
        "iommu_type": "\n".join(
            f"0000:{_bus(i):02x}:00.0 {'DMA-FQ' if faults.iommu else 'identity'}" for i in range(n)
        ),
        "iommu_groups": "96",
        "cmdline": cmdline,
        "uvm": "N" if faults.hmm else "Y",
        "aspm": "[default] performance powersave powersupersave",
        "lspci": _lspci_text(n, faults),
        "cpus": "",
        "log": "\n".join(log_lines),
    }
    return "".join(f"{SECTION_MARK}{name}\n{text}\n" for name, text in sections.items())
