"""NVIDIA XID errors: the kernel's one-line reports of GPU faults, decoded.

The driver logs `NVRM: Xid (PCI:0000:41:00): 79, pid=..., name=..., GPU has fallen
off the bus.`; the number alone says what broke and what it takes to recover.
The table follows NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors); an
XID not in it is still shown, as unknown, with the line it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.core.formatting import clipped
from tui.health.findings import CRIT, INFO, WARN
from tui.health.interconnect.parse import norm_bdf

# What it takes to recover, mildest first.
RESTART_ENGINE = "restart the engine"
RESET_GPU = "reset the GPU"
REBOOT = "reboot the node"
RMA = "RMA if it repeats"
NONE = "none (informational)"


@dataclass(frozen=True, slots=True)
class XidInfo:
    name: str
    meaning: str
    action: str
    severity: str


XID_TABLE: dict[int, XidInfo] = {
    8: XidInfo(
        "GPU stopped processing", "a channel timed out (driver or app)", RESTART_ENGINE, WARN
    ),
    13: XidInfo(
        "Graphics Engine Exception",
        "an app's kernel faulted (bad address, illegal instruction)",
        RESTART_ENGINE,
        WARN,
    ),
    31: XidInfo(
        "GPU memory page fault",
        "an app touched memory it does not own (MMU fault)",
        RESTART_ENGINE,
        WARN,
    ),
    32: XidInfo(
        "Invalid or corrupted push buffer stream",
        "commands arrived corrupted (driver, or PCIe trouble)",
        RESTART_ENGINE,
        WARN,
    ),
    38: XidInfo("Driver firmware error", "the GPU's firmware reported an error", RESET_GPU, CRIT),
    43: XidInfo(
        "GPU stopped processing",
        "a channel was reset after an app fault; the GPU itself is fine",
        RESTART_ENGINE,
        WARN,
    ),
    45: XidInfo(
        "Preemptive cleanup",
        "channels torn down after an earlier error or a killed process",
        NONE,
        INFO,
    ),
    48: XidInfo(
        "Double Bit ECC Error",
        "an uncorrectable DRAM error; the page is retired/row remapped at the next reset",
        RESET_GPU,
        CRIT,
    ),
    61: XidInfo(
        "Internal micro-controller breakpoint/warning", "GPU firmware stop", RESET_GPU, CRIT
    ),
    62: XidInfo("Internal micro-controller halt", "GPU firmware halted", RESET_GPU, CRIT),
    63: XidInfo(
        "ECC page retirement or row remapping recording event",
        "a bad row was recorded for remapping; it takes effect at the next GPU reset",
        RESET_GPU,
        WARN,
    ),
    64: XidInfo(
        "ECC page retirement or row remapper recording failure",
        "a bad row could not be recorded",
        f"{RESET_GPU}; {RMA}",
        CRIT,
    ),
    68: XidInfo("NVDEC0 Exception", "video decoder fault", RESTART_ENGINE, WARN),
    69: XidInfo(
        "Graphics Engine class error", "an app sent an invalid command", RESTART_ENGINE, WARN
    ),
    74: XidInfo(
        "NVLink Error",
        "an NVLink link reported a fatal error or went down",
        f"{RESET_GPU}; {RMA}",
        CRIT,
    ),
    79: XidInfo(
        "GPU has fallen off the bus",
        "the GPU stopped answering on PCIe (power, thermal, link or board failure)",
        f"{REBOOT}; {RMA}",
        CRIT,
    ),
    81: XidInfo("VGA Subsystem Error", "display engine fault", RESET_GPU, CRIT),
    92: XidInfo(
        "High single-bit ECC error rate",
        "correctable DRAM errors at a high rate: the memory is wearing",
        f"{RESET_GPU}; {RMA}",
        WARN,
    ),
    94: XidInfo(
        "Contained ECC error",
        "an uncorrectable error confined to the apps that used the memory",
        RESTART_ENGINE,
        WARN,
    ),
    95: XidInfo(
        "Uncontained ECC error",
        "an uncorrectable error that may have hit every app on the GPU",
        RESET_GPU,
        CRIT,
    ),
    109: XidInfo(
        "Context Switch Timeout", "an app's context did not switch out", RESTART_ENGINE, WARN
    ),
    119: XidInfo(
        "GSP RPC Timeout",
        "the GPU System Processor stopped answering the driver",
        f"{RESET_GPU} (reboot if the reset fails)",
        CRIT,
    ),
    120: XidInfo("GSP Error", "the GPU System Processor reported an error", RESET_GPU, CRIT),
    121: XidInfo("C2C Link corrected error", "a corrected chip-to-chip link error", NONE, INFO),
    140: XidInfo(
        "Unrecovered ECC Error", "an ECC error the driver could not recover", RESET_GPU, CRIT
    ),
    154: XidInfo(
        "GPU Recovery Action Changed",
        "the driver changed what this GPU needs to recover (given in the line)",
        "as the line says",
        CRIT,
    ),
}

# `NVRM: Xid (PCI:0000:41:00): 79, pid=1234, name=python3, GPU has fallen off the bus.`
# Older drivers omit `PCI:`, some omit pid/name; dmesg prefixes `[ 1234.5678] `.
XID_LINE = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\):"
    r"\s*(?P<xid>\d+)\s*,\s*(?P<rest>.*)$"
)
_PID = re.compile(r"^pid=(?P<pid>'?<?[\w-]*>?'?)\s*,\s*")
# NVIDIA's XIDs are below 1000 and Linux pids below 2**22: a longer number is not one the
# driver wrote (and int() refuses one over 4300 digits), so it reads as unknown.
MAX_XID_DIGITS = 6
MAX_PID_DIGITS = 10
# The driver's detail is a line or two; a longer one (a corrupted or hostile log) is cut.
MAX_DETAIL_CHARS = 1000
MAX_TEXT_CHARS = 2000
_NAME = re.compile(r"^name=(?P<name>[^,]*),\s*")
# XID 154: `GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)`
_RECOVERY = re.compile(r"to 0x[0-9a-fA-F]+ \((?P<action>[^)]+)\)")


@dataclass(frozen=True, slots=True)
class XidEvent:
    """One decoded XID line; gpu_index is None when the bus id matches no known GPU,
    xid None when the line's number is too long to be an XID."""

    xid: int | None
    bus_id: str
    gpu_index: int | None
    name: str
    meaning: str
    action: str
    severity: str
    detail: str  # the driver's own words after pid/name
    text: str  # the whole kernel line
    pid: int | None = None
    process_name: str | None = None
    timestamp_s: float | None = None
    cursor: str | None = None

    @property
    def number_text(self) -> str:
        """The XID as shown: its number, or `?` when the line's number was unreadable."""
        return "?" if self.xid is None else str(self.xid)

    def as_dict(self) -> dict[str, object]:
        return {
            "xid": self.xid,
            "gpu": self.gpu_index,
            "bus_id": self.bus_id,
            "name": self.name,
            "meaning": self.meaning,
            "action": self.action,
            "severity": self.severity,
            "detail": self.detail,
            "pid": self.pid,
            "process_name": self.process_name,
            "timestamp_s": self.timestamp_s,
            "text": self.text,
        }


def decode_xid(
    text: str,
    bus_to_gpu: dict[str, int] | None = None,
    timestamp_s: float | None = None,
    cursor: str | None = None,
) -> XidEvent | None:
    """An XidEvent for a kernel line that reports one; None for every other line."""
    match = XID_LINE.search(text)
    if match is None:
        return None
    digits = match.group("xid")
    number = int(digits) if len(digits) <= MAX_XID_DIGITS else None
    rest = match.group("rest").strip()
    pid: int | None = None
    process: str | None = None
    pid_match = _PID.match(rest)
    if pid_match:
        raw = pid_match.group("pid").strip("'")
        pid = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= MAX_PID_DIGITS else None
        rest = rest[pid_match.end() :]
    name_match = _NAME.match(rest)
    if name_match:
        raw_name = name_match.group("name").strip()
        process = None if raw_name in ("", "<unknown>") else raw_name
        rest = rest[name_match.end() :]
    info = XID_TABLE.get(number) if number is not None else None
    if number is None:
        info = XidInfo(
            f"unreadable XID ({len(digits)}-digit number)",
            "the line's XID number is not one the driver writes",
            "read the kernel line itself",
            WARN,
        )
    elif info is None:
        info = XidInfo(
            f"unknown XID {number}",
            "not in servedeck's table",
            "look it up in NVIDIA's XID catalog",
            WARN,
        )
    action = info.action
    if number == 154:
        recovery = _RECOVERY.search(rest)
        if recovery:
            action = recovery.group("action")
    bus = norm_bdf(match.group("bus"))
    return XidEvent(
        xid=number,
        bus_id=bus,
        gpu_index=(bus_to_gpu or {}).get(bus),
        name=info.name,
        meaning=info.meaning,
        action=action,
        severity=info.severity,
        detail=clipped(rest, MAX_DETAIL_CHARS),
        text=clipped(text, MAX_TEXT_CHARS),
        pid=pid,
        process_name=process,
        timestamp_s=timestamp_s,
        cursor=cursor,
    )
