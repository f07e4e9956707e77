"""Parsers for what the interconnect doctor reads, in the real tools' formats.

Every parser takes text and never raises: unreadable input gives an empty result,
and the analysis then says the check could not be made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tui.gpu.smi_parse import parse_topo

SECTION_MARK = "@@servedeck:"
MIB = 1024**2

# `nvidia-smi --query-gpu` fields the doctor asks for, in this order.
LINK_FIELDS = (
    "index",
    "pci.bus_id",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "utilization.gpu",
)


def split_sections(text: str) -> dict[str, str]:
    """`@@servedeck:NAME` marker lines cut one script's output into named sections."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(SECTION_MARK):
            current = sections.setdefault(line[len(SECTION_MARK) :].strip(), [])
            continue
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def norm_bdf(raw: str) -> str:
    """Any PCI address form to `dddd:bb:dd.f`, lower case.

    nvidia-smi says `00000000:41:00.0`, lspci -D `0000:41:00.0`, the kernel's
    XID lines `PCI:0000:41:00` (no function: 0 is meant).
    """
    text = raw.strip().lower().removeprefix("pci:")
    parts = text.split(":")
    if len(parts) == 2:
        parts = ["0", *parts]
    if len(parts) != 3:
        return text
    domain, bus, devfn = parts
    if "." not in devfn:
        devfn += ".0"
    try:
        return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{devfn}"
    except ValueError:
        return text


def p2p_matrix(text: str) -> tuple[tuple[str, ...], ...]:
    """`nvidia-smi topo -p2p r|w`: the GPU x GPU status matrix (OK, CNS, GNS, TNS, NS, U)."""
    return parse_topo(text).matrix


@dataclass(frozen=True, slots=True)
class GpuLink:
    """One GPU's PCIe link as nvidia-smi reports it, with the load it was under."""

    index: int
    bus_id: str
    gen_current: int | None
    gen_max: int | None
    width_current: int | None
    width_max: int | None
    utilization_pct: float | None


def _num(raw: str) -> float | None:
    try:
        return float(raw.strip())
    except ValueError:
        return None


def parse_links(text: str) -> list[GpuLink]:
    """CSV rows of LINK_FIELDS (`--format=csv,noheader,nounits`)."""
    links = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(LINK_FIELDS) or not cells[0].isdigit():
            continue
        gen, gen_max, width, width_max, util = (_num(c) for c in cells[2:])
        links.append(
            GpuLink(
                index=int(cells[0]),
                bus_id=norm_bdf(cells[1]),
                gen_current=int(gen) if gen is not None else None,
                gen_max=int(gen_max) if gen_max is not None else None,
                width_current=int(width) if width is not None else None,
                width_max=int(width_max) if width_max is not None else None,
                utilization_pct=util,
            )
        )
    return links


_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-7])\s*$")
_TOTAL = re.compile(r"^\s+Total\s*:\s*(\d+)\s*MiB")


def parse_memory_q(text: str) -> dict[str, tuple[int | None, int | None]]:
    """`nvidia-smi -q -d MEMORY`: bus id -> (FB total bytes, BAR1 total bytes)."""
    found: dict[str, tuple[int | None, int | None]] = {}
    bus: str | None = None
    block = ""
    fb: int | None = None
    bar1: int | None = None
    for line in text.splitlines():
        header = _GPU_HEADER.match(line.strip())
        if header:
            if bus is not None:
                found[bus] = (fb, bar1)
            bus, block, fb, bar1 = norm_bdf(header.group(1)), "", None, None
            continue
        stripped = line.strip()
        if stripped.endswith("Memory Usage") and ":" not in stripped:
            block = stripped
            continue
        total = _TOTAL.match(line)
        if total and bus is not None:
            value = int(total.group(1)) * MIB
            if block.startswith("FB"):
                fb = value
            elif block.startswith("BAR1"):
                bar1 = value
    if bus is not None:
        found[bus] = (fb, bar1)
    return found


@dataclass(frozen=True, slots=True)
class PciDevice:
    """One `lspci -D -vvv` block: the header line and its ACS control, if readable."""

    bdf: str
    header: str
    is_bridge: bool
    acs_ctl: str | None = None  # the ACSCtl line's flags, e.g. "SrcValid+ ReqRedir+ ..."
    access_denied: bool = False
    flags: dict[str, bool] = field(default_factory=dict)

    @property
    def redirects(self) -> bool:
        """ACS request or completion redirect on: P2P traffic detours through the root."""
        return self.flags.get("ReqRedir", False) or self.flags.get("CmpltRedir", False)


_BLOCK_HEADER = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] ")


def parse_lspci(text: str) -> dict[str, PciDevice]:
    """`lspci -D -vvv`: bdf -> device; ACSCtl only appears when run as root."""
    devices: dict[str, PciDevice] = {}
    header: str | None = None
    body: list[str] = []

    def flush() -> None:
        if header is None:
            return
        bdf = norm_bdf(header.split(" ", 1)[0])
        acs = next(
            (b.split(":", 1)[1].strip() for b in body if b.strip().startswith("ACSCtl:")), None
        )
        flags = {}
        for word in (acs or "").split():
            if word[-1:] in "+-":
                flags[word[:-1]] = word.endswith("+")
        devices[bdf] = PciDevice(
            bdf=bdf,
            header=header,
            is_bridge="PCI bridge" in header,
            acs_ctl=acs,
            access_denied=any("<access denied>" in b for b in body),
            flags=flags,
        )

    for line in text.splitlines():
        if _BLOCK_HEADER.match(line):
            flush()
            header, body = line.strip(), []
        elif header is not None:
            body.append(line)
    flush()
    return devices


def parse_paths(text: str) -> dict[str, list[str]]:
    """Lines `BDF /sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0`: GPU -> bridges above it."""
    paths: dict[str, list[str]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        chain = [norm_bdf(p) for p in parts[1].split("/") if re.match(r"^[0-9a-f]{4}:", p)]
        gpu = norm_bdf(parts[0])
        paths[gpu] = [bdf for bdf in chain if bdf != gpu]
    return paths


def parse_keyvalues(text: str) -> dict[str, str]:
    """Lines `key value...` (first word is the key)."""
    pairs = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            pairs[norm_bdf(key) if re.match(r"^[0-9a-fA-F]+:", key) else key] = value.strip()
    return pairs


def aspm_policy(text: str) -> str | None:
    """`/sys/module/pcie_aspm/parameters/policy`: the bracketed (selected) word."""
    match = re.search(r"\[(\w+)\]", text)
    return match.group(1) if match else None


def cpu_set(spec: str | None) -> set[int]:
    """`0-47,96-143` to a set of CPU numbers; unreadable gives an empty set."""
    cpus: set[int] = set()
    for part in (spec or "").split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            continue
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus
