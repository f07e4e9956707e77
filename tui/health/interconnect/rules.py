"""The interconnect doctor's rules: sections read from a host in, findings out.

Pure functions over the text the real tools print (see collect.py for
how it is read and tui.sim.interconnect for the simulated box), so every rule
is tested against the exact formats. The published picture behind the rules:
ACS redirection, an IOMMU in translation mode, a small BAR1, a downtrained link
or HMM left on in nvidia_uvm halve P2P bandwidth or hang NCCL, silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tui.gpu.smi_parse import parse_topo
from tui.health.findings import CRIT, INFO, WARN, Finding, sort_findings
from tui.health.interconnect.parse import (
    aspm_policy,
    cpu_set,
    norm_bdf,
    p2p_matrix,
    parse_keyvalues,
    parse_links,
    parse_lspci,
    parse_memory_q,
    parse_paths,
)

MIB = 1024**2
# A link is "under load" when the GPU is this busy; idle links drop to Gen1 by design.
LOAD_UTILIZATION_PCT = 20.0
P2P_MEANING = {
    "CNS": "chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "topology not supported",
    "NS": "not supported",
    "DR": "disabled by regkey",
    "U": "unknown",
}


@dataclass(frozen=True, slots=True)
class InterconnectReport:
    """Findings plus the matrices they came from (for the pane and `--json`)."""

    findings: tuple[Finding, ...]
    gpu_bus_ids: tuple[str, ...] = ()
    numa_nodes: tuple[int | None, ...] = ()
    topology: tuple[tuple[str, ...], ...] = ()
    p2p_read: tuple[tuple[str, ...], ...] = ()
    p2p_write: tuple[tuple[str, ...], ...] = ()
    elapsed_s: float | None = None
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        return {
            "findings": [f.as_dict() for f in self.findings],
            "gpus": [
                {
                    "index": i,
                    "bus_id": bus,
                    "numa_node": self.numa_nodes[i] if i < len(self.numa_nodes) else None,
                }
                for i, bus in enumerate(self.gpu_bus_ids)
            ],
            "topology": [list(row) for row in self.topology],
            "p2p_read": [list(row) for row in self.p2p_read],
            "p2p_write": [list(row) for row in self.p2p_write],
            "elapsed_s": self.elapsed_s,
            "notes": list(self.notes),
        }


def _p2p_findings(name: str, matrix: tuple[tuple[str, ...], ...]) -> list[Finding]:
    """One finding per matrix: the pairs whose P2P is not OK, on the GPU they share if any."""
    bad = [
        (i, j, matrix[i][j])
        for i in range(len(matrix))
        for j in range(i + 1, len(matrix[i]))
        if matrix[i][j] not in ("OK", "X")
    ]
    if not bad:
        return []
    shared = set.intersection(*({i, j} for i, j, _ in bad))
    gpu = min(shared) if len(shared) == 1 or len(bad) == 1 else None
    shown = ", ".join(
        f"GPU{i}-GPU{j}={cell} ({P2P_MEANING.get(cell, cell)})" for i, j, cell in bad[:4]
    )
    more = f", ... ({len(bad)} pairs)" if len(bad) > 4 else ""
    return [
        Finding(
            f"p2p_{name}",
            WARN,
            gpu,
            f"nvidia-smi topo -p2p {name[0]}: {shown}{more}",
            "P2P is off for these pairs, so NCCL goes through host memory: see the ACS, "
            "IOMMU and BAR1 findings (CNS/TNS: platform; GNS: this GPU cannot)",
        )
    ]


def _acs_findings(
    sections: dict[str, str], bus_to_gpu: dict[str, int], uid: str | None
) -> list[Finding]:
    text = sections.get("lspci", "")
    if not text.strip() or "lspci: not found" in text:
        return [
            Finding(
                "acs",
                INFO,
                None,
                "lspci: not found",
                "install pciutils to check ACS on the bridges between GPUs",
            )
        ]
    devices = parse_lspci(text)
    paths = parse_paths(sections.get("paths", ""))
    above: dict[str, list[int]] = {}
    for bus, chain in paths.items():
        if bus in bus_to_gpu:
            for bridge in chain:
                above.setdefault(bridge, []).append(bus_to_gpu[bus])
    found = []
    denied = []
    for bridge, gpus in sorted(above.items()):
        device = devices.get(bridge)
        if device is None:
            continue
        if device.access_denied and device.acs_ctl is None:
            denied.append(bridge)
        elif device.redirects:
            names = ", ".join(f"GPU{g}" for g in sorted(gpus))
            found.append(
                Finding(
                    "acs",
                    CRIT,
                    min(gpus),
                    f"{bridge} (above {names}) ACSCtl: {device.acs_ctl}",
                    f"P2P detours through the root complex: `setpci -s {bridge} "
                    "ECAP_ACS+0x6.w=0000` (or disable ACS in the BIOS)",
                )
            )
    if denied and not found:
        who = f"uid {uid}" if uid else "a non-root user"
        found.append(
            Finding(
                "acs",
                INFO,
                None,
                f"lspci -vvv as {who}: Capabilities: <access denied> on {len(denied)} "
                f"bridge(s) above the GPUs ({denied[0]}, ...)",
                "ACS control needs root: run `sudo servedeck doctor --interconnect` to check it",
            )
        )
    return found


_PASSTHROUGH = re.compile(r"(^|\s)(iommu=pt|iommu\.passthrough=1|intel_iommu=off|amd_iommu=off)\b")
_IOMMU_ON = re.compile(r"(^|\s)((intel|amd)_iommu=on\S*|iommu=on|iommu\.passthrough=0)\b")


def _iommu_findings(sections: dict[str, str], bus_to_gpu: dict[str, int]) -> list[Finding]:
    cmdline = sections.get("cmdline", "").strip()
    groups_text = sections.get("iommu_groups", "").strip()
    groups = int(groups_text) if groups_text.isdigit() else 0
    types = parse_keyvalues(sections.get("iommu_type", ""))
    translated = sorted(
        bus_to_gpu[bus]
        for bus, kind in types.items()
        if bus in bus_to_gpu and kind.startswith("DMA")
    )
    fix = "add iommu=pt to the kernel command line (or turn the IOMMU off in the BIOS) and reboot"
    if translated:
        bus = next(b for b, g in bus_to_gpu.items() if g == translated[0])
        names = ", ".join(f"GPU{g}" for g in translated)
        return [
            Finding(
                "iommu",
                WARN,
                translated[0] if len(translated) == 1 else None,
                f"{bus}/iommu_group/type = {types[bus]} ({names} translated); "
                f"/proc/cmdline: {cmdline or '(empty)'}",
                fix,
            )
        ]
    if types:
        return []  # every GPU group is identity (passthrough): fine
    if groups and _IOMMU_ON.search(cmdline) and not _PASSTHROUGH.search(cmdline):
        on = _IOMMU_ON.search(cmdline)
        assert on is not None
        return [
            Finding(
                "iommu",
                WARN,
                None,
                f"/proc/cmdline: {on.group(2)} without iommu=pt; {groups} IOMMU groups",
                fix,
            )
        ]
    return []


def _bar1_findings(sections: dict[str, str], bus_to_gpu: dict[str, int]) -> list[Finding]:
    found = []
    for bus, (fb, bar1) in parse_memory_q(sections.get("memory", "")).items():
        if fb is None or bar1 is None or bar1 >= fb or bus not in bus_to_gpu:
            continue
        found.append(
            Finding(
                "bar1",
                WARN,
                bus_to_gpu[bus],
                f"{bus} BAR1 Total : {bar1 // MIB} MiB < FB Total : {fb // MIB} MiB",
                "enable Above 4G Decoding and Resizable BAR in the BIOS (large BAR1 for P2P)",
            )
        )
    return found


def _link_findings(sections: dict[str, str]) -> list[Finding]:
    found = []
    for link in parse_links(sections.get("links", "")):
        busy = (link.utilization_pct or 0.0) >= LOAD_UTILIZATION_PCT
        gen_low = link.gen_current and link.gen_max and link.gen_current < link.gen_max
        width_low = link.width_current and link.width_max and link.width_current < link.width_max
        if busy and (gen_low or width_low):
            found.append(
                Finding(
                    "pcie_link",
                    WARN,
                    link.index,
                    f"{link.bus_id} Gen{link.gen_current} x{link.width_current} "
                    f"(max Gen{link.gen_max} x{link.width_max}) at "
                    f"{link.utilization_pct:.0f}% utilization",
                    "reseat the card or riser, check the slot's BIOS link speed and "
                    "`lspci -vvv` LnkSta for this BDF",
                )
            )
    return found


def _module_findings(sections: dict[str, str]) -> list[Finding]:
    found = []
    hmm = sections.get("uvm", "").strip()
    if hmm in ("N", "0"):
        found.append(
            Finding(
                "uvm_hmm",
                WARN,
                None,
                f"/sys/module/nvidia_uvm/parameters/uvm_disable_hmm = {hmm}",
                "echo 'options nvidia_uvm uvm_disable_hmm=1' > /etc/modprobe.d/nvidia-uvm.conf, "
                "then reload nvidia_uvm (or reboot)",
            )
        )
    policy = aspm_policy(sections.get("aspm", ""))
    cmdline = sections.get("cmdline", "")
    if policy in ("powersave", "powersupersave") and "pcie_aspm=off" not in cmdline:
        found.append(
            Finding(
                "pcie_aspm",
                WARN,
                None,
                f"/sys/module/pcie_aspm/parameters/policy = {sections.get('aspm', '').strip()}",
                "echo performance > /sys/module/pcie_aspm/parameters/policy "
                "(or pcie_aspm=off on the kernel command line)",
            )
        )
    return found


def _numa_findings(
    sections: dict[str, str], bus_to_gpu: dict[str, int], affinity: tuple[str | None, ...]
) -> list[Finding]:
    cpus_of = {
        int(k): v for k, v in parse_keyvalues(sections.get("cpus", "")).items() if k.isdigit()
    }
    found = []
    for line in sections.get("apps", "").splitlines():
        pid_text, _, bus = (cell.strip() for cell in line.partition(","))
        if not pid_text.isdigit() or norm_bdf(bus) not in bus_to_gpu:
            continue
        gpu = bus_to_gpu[norm_bdf(bus)]
        allowed = cpu_set(cpus_of.get(int(pid_text)))
        local = cpu_set(affinity[gpu] if gpu < len(affinity) else None)
        if allowed and local and not (allowed & local):
            found.append(
                Finding(
                    "numa",
                    WARN,
                    gpu,
                    f"pid {pid_text} Cpus_allowed_list {cpus_of[int(pid_text)]} vs GPU{gpu} "
                    f"CPU affinity {affinity[gpu]}",
                    f"pin the process to its GPU's node (numactl --cpunodebind of GPU{gpu}'s "
                    "NUMA node), or drop the wrong CPU pinning",
                )
            )
    return found


def _log_findings(sections: dict[str, str]) -> list[Finding]:
    lines = [line.strip() for line in sections.get("log", "").splitlines() if line.strip()]
    found = []
    custom = next((line for line in lines if "Custom allreduce is disabled" in line), None)
    if custom:
        found.append(
            Finding(
                "custom_allreduce",
                INFO,
                None,
                custom,
                "expected on more than two PCIe GPUs: all-reduce runs on NCCL, so its "
                "transport (below) and the probe's bus bandwidth decide decode speed",
            )
        )
    shm = [line for line in lines if re.search(r"via (SHM|NET)/", line)]
    if shm:
        found.append(
            Finding(
                "nccl_transport",
                WARN,
                None,
                f"{shm[0]} ({len(shm)} such channel line(s))",
                "NCCL is not using P2P between these ranks: fix the P2P findings above "
                "(ACS, IOMMU, BAR1); NCCL_P2P_LEVEL=SYS only if P2P is safe across the root",
            )
        )
    return found


def analyze_interconnect(
    sections: dict[str, str], elapsed_s: float | None = None
) -> InterconnectReport:
    """Every rule over one collection; never raises on bad input."""
    links = parse_links(sections.get("links", ""))
    bus_to_gpu = {link.bus_id: link.index for link in links}
    topo = parse_topo(sections.get("topo", ""))
    uid = sections.get("uid", "").strip() or None
    notes = []
    if not links:
        notes.append("nvidia-smi answered no GPU link data: GPU checks skipped")
    findings = [
        *_p2p_findings("read", p2p_matrix(sections.get("p2p_r", ""))),
        *_p2p_findings("write", p2p_matrix(sections.get("p2p_w", ""))),
        *(_acs_findings(sections, bus_to_gpu, uid) if links else []),
        *_iommu_findings(sections, bus_to_gpu),
        *_bar1_findings(sections, bus_to_gpu),
        *_link_findings(sections),
        *_module_findings(sections),
        *_numa_findings(sections, bus_to_gpu, topo.cpu_affinity),
        *_log_findings(sections),
    ]
    return InterconnectReport(
        findings=tuple(sort_findings(findings)),
        gpu_bus_ids=tuple(link.bus_id for link in sorted(links, key=lambda k: k.index)),
        numa_nodes=topo.numa_affinity,
        topology=topo.matrix,
        p2p_read=p2p_matrix(sections.get("p2p_r", "")),
        p2p_write=p2p_matrix(sections.get("p2p_w", "")),
        elapsed_s=elapsed_s,
        notes=tuple(notes),
    )
