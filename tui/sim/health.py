"""The simulated box's GPU health: `nvidia-smi -q` counters and kernel XID lines.

Printed in the real formats and read back by the real parsers. Events for the demo
come from SERVEDECK_SIM_XID, e.g. `79@5,63@2` (XID 79 on GPU5, XID 63 on GPU2);
an XID 63/64/48 also leaves its GPU's row remap pending, as the driver would.
"""

from __future__ import annotations

import os
import re

from tui.core.formatting import clipped
from tui.health.xid.decode import MAX_XID_DIGITS
from tui.sim import spec

ENV_XID = "SERVEDECK_SIM_XID"
_ENTRY = re.compile(rf"([0-9]{{1,{MAX_XID_DIGITS}}})@([0-9]{{1,3}})")
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
    """[(xid, gpu)] from `79@5,63@2`; malformed entries are left out (bad_xid_entries)."""
    return parse_xids(os.environ.get(ENV_XID, ""))[0]


def bad_xid_entries() -> str | None:
    """One line naming the SERVEDECK_SIM_XID entries left out, or None when all read."""
    bad = parse_xids(os.environ.get(ENV_XID, ""))[1]
    if not bad:
        return None
    named = ", ".join(repr(clipped(word, 40)) for word in bad)
    return (
        f"{ENV_XID}: ignored {named} "
        f"(each entry is XID@GPU: an XID of 1-{MAX_XID_DIGITS} digits, GPU 0-{spec.GPU_COUNT - 1})"
    )


def parse_xids(value: str) -> tuple[list[tuple[int, int]], list[str]]:
    """([(xid, gpu)], the entries that are not `XID@GPU`) of a SERVEDECK_SIM_XID value."""
    found: list[tuple[int, int]] = []
    bad: list[str] = []
    for word in value.split(","):
        word = word.strip()
        if not word:
            continue
        match = _ENTRY.fullmatch(word)
        if match and int(match.group(2)) < spec.GPU_COUNT:
            found.append((int(match.group(1)), int(match.group(2))))
        else:
            bad.append(word)
    return found, bad


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
