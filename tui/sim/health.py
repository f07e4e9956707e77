"""The simulated box's GPU health: `nvidia-smi -q` counters and kernel XID lines.

Printed in the real formats and read back by the real parsers. Events for the demo
come from SERVEDECK_SIM_XID, e.g. `79@5,63@2` (XID 79 on GPU5, XID 63 on GPU2);
an XID 63/64/48 also leaves its GPU's row remap pending, as the driver would.
"""

from __future__ import annotations

import os

from tui.sim import spec

ENV_XID = "SERVEDECK_SIM_XID"
_DETAIL = {
    13: "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address",
    31: "Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 "
    "faulted @ 0x7f2a_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    43: "Ch 00000010",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
    "at partition 6, subpartition 0.",
    63: "Row Remapper: New row marked for remapping, reset gpu to activate.",
    64: "Row Remapper: Failed to mark row for remapping.",
    74: "NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
    79: "GPU has fallen off the bus.",
    92: "High single-bit ECC error rate",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
    95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
    119: "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 "
    "(GSP_RM_CONTROL) (0x20800a4c 0x4).",
    154: "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
}


def xids_from_env() -> list[tuple[int, int]]:
    """[(xid, gpu)] from `79@5,63@2`; malformed words are skipped."""
    found = []
    for word in os.environ.get(ENV_XID, "").split(","):
        xid, _, gpu = word.strip().partition("@")
        if xid.isdigit() and gpu.isdigit() and int(gpu) < spec.GPU_COUNT:
            found.append((int(xid), int(gpu)))
    return found


def xid_line(xid: int, gpu: int, pid: int = 4181) -> str:
    """The kernel's line, as `journalctl -k -o cat` shows it."""
    bus = spec.GPU_BUS_IDS[gpu].split(":", 1)[1].rsplit(".", 1)[0]
    detail = _DETAIL.get(xid, "")
    return f"NVRM: Xid (PCI:0000:{bus}): {xid}, pid={pid}, name=VLLM::Worker_TP{gpu}, {detail}"


def query_text(xids: list[tuple[int, int]]) -> tuple[str, str]:
    """(`index, pci.bus_id` CSV, `nvidia-smi -q`) for the simulated GPUs."""
    pending = {gpu for xid, gpu in xids if xid in (48, 63, 64)}
    failed = {gpu for xid, gpu in xids if xid == 64}
    ids = "\n".join(f"{i}, {bus}" for i, bus in enumerate(spec.GPU_BUS_IDS))
    out = [
        "==============NVSMI LOG==============",
        f"Driver Version                            : {spec.DRIVER_VERSION}",
        f"Attached GPUs                             : {spec.GPU_COUNT}",
    ]
    for i, bus in enumerate(spec.GPU_BUS_IDS):
        out += [
            f"GPU {bus}",
            "    PCI",
            f"        Bus Id                            : {bus}",
            "        Replays Since Reset               : 0",
            "    Clocks Event Reasons",
            "        Idle                              : Active",
            "        HW Slowdown                       : Not Active",
            "            HW Thermal Slowdown           : Not Active",
            "        SW Thermal Slowdown               : Not Active",
            "    ECC Errors",
            "        Volatile",
            "            DRAM Correctable              : 0",
            f"            DRAM Uncorrectable            : {1 if i in pending else 0}",
            "        Aggregate",
            "            DRAM Correctable              : 0",
            f"            DRAM Uncorrectable            : {1 if i in pending else 0}",
            "    Remapped Rows",
            "        Correctable Error                 : 0",
            f"        Uncorrectable Error               : {1 if i in pending else 0}",
            f"        Pending                           : {'Yes' if i in pending else 'No'}",
            f"        Remapping Failure Occurred        : {'Yes' if i in failed else 'No'}",
        ]
    return ids, "\n".join(out)
