"""Per-GPU health counters from `nvidia-smi -q`: retired pages, remapped rows, PCIe
replays, ECC, clock-event (throttle) reasons and their violation counters.

`nvidia-smi -q` works the same locally and over SSH and names every counter,
so one parser serves both. Its layout is an indented tree that changed between
driver generations (ECC "Single/Double Bit" before Hopper, "DRAM/SRAM" after;
"Clocks Throttle Reasons" renamed "Clocks Event Reasons"): lookups accept both.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from tui.health.interconnect.parse import norm_bdf

Tree = dict[str, "str | Tree"]
_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-7])\s*$")


def parse_q_tree(text: str) -> dict[str, Tree]:
    """`nvidia-smi -q`: bus id -> that GPU's block as a nested dict (4-space indents)."""
    gpus: dict[str, Tree] = {}
    stack: list[tuple[int, Tree]] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        header = _GPU_HEADER.match(raw.strip()) if not raw.startswith(" ") else None
        if header:
            root: Tree = {}
            gpus[norm_bdf(header.group(1))] = root
            stack = [(0, root)]
            continue
        if not stack:
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        key, sep, value = raw.strip().partition(":")
        if sep and value.strip():
            parent[key.strip()] = value.strip()
        else:
            child: Tree = {}
            parent[key.strip()] = child
            stack.append((indent, child))
    return gpus


def _get(tree: Tree, *names: str) -> str | Tree | None:
    """The first of `names` present; a name may be a path `A/B`."""
    for name in names:
        node: str | Tree | None = tree
        for part in name.split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def _int(value: object) -> int | None:
    text = value.replace(",", "") if isinstance(value, str) else ""
    match = re.match(r"^\s*(\d+)", text)
    return int(match.group(1)) if match else None


def _yes(value: object) -> bool | None:
    if not isinstance(value, str) or value.upper() in ("N/A", ""):
        return None
    return value.lower() in ("yes", "true", "1")


def _ecc_total(node: object, want_uncorrected: bool) -> int | None:
    """Sum of the uncorrected (or corrected) counters under a Volatile/Aggregate node."""
    if not isinstance(node, dict):
        return None
    total: int | None = None
    for key, value in node.items():
        unc = "Uncorrectable" in key or "Double Bit" in key
        cor = not unc and ("Correctable" in key or "Single Bit" in key)
        if not (unc if want_uncorrected else cor):
            continue
        # pre-Hopper drivers nest: Single Bit -> {Device Memory, ..., Total}
        count = _int(value.get("Total")) if isinstance(value, dict) else _int(value)
        if count is not None:
            total = (total or 0) + count
    return total


@dataclass(frozen=True, slots=True)
class HealthCounters:
    """One GPU's counters; None where the GPU or driver does not report one."""

    index: int
    bus_id: str
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    pcie_replays: int | None = None
    ecc_volatile_corrected: int | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    clock_event_reasons: tuple[str, ...] = ()
    violation_us: tuple[tuple[str, int], ...] = ()  # (reason, microseconds since boot)
    # NVLink error counters summed over the GPU's links (NVML only; nvidia-smi -q has none).
    nvlink_replay_errors: int | None = None
    nvlink_recovery_errors: int | None = None
    nvlink_crc_flit_errors: int | None = None
    nvlink_crc_data_errors: int | None = None
    source: str = "nvidia-smi"  # nvidia-smi | nvml | simulated
    # Reads the driver refused (NVML NotSupported and the like): shown as n/a, named here.
    unavailable: tuple[str, ...] = ()

    @property
    def nvlink_errors(self) -> int | None:
        """Replay + recovery + CRC errors over all links; None where none was readable."""
        parts = (
            self.nvlink_replay_errors,
            self.nvlink_recovery_errors,
            self.nvlink_crc_flit_errors,
            self.nvlink_crc_data_errors,
        )
        known = [part for part in parts if part is not None]
        return sum(known) if known else None

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["clock_event_reasons"] = list(self.clock_event_reasons)
        data["violation_us"] = dict(self.violation_us)
        data["unavailable"] = list(self.unavailable)
        data["nvlink_errors"] = self.nvlink_errors
        return data


_IGNORED_REASONS = ("Idle", "Applications Clocks Setting", "Display Clock Setting")


def counters_from_tree(index: int, bus_id: str, tree: Tree) -> HealthCounters:
    reasons = _get(tree, "Clocks Event Reasons", "Clocks Throttle Reasons")
    active: list[str] = []
    if isinstance(reasons, dict):
        for key, value in reasons.items():
            if isinstance(value, dict):  # HW Slowdown -> {HW Thermal Slowdown: ...}
                active += [k for k, v in value.items() if v == "Active"]
            if value == "Active" and key not in _IGNORED_REASONS:
                active.append(key)
    counters = _get(tree, "Clocks Event Reasons Counters", "Clocks Throttle Reasons Counters")
    violations = (
        tuple((k, n) for k, v in counters.items() if (n := _int(v)) is not None)
        if isinstance(counters, dict)
        else ()
    )
    ecc = _get(tree, "ECC Errors")
    ecc_tree = ecc if isinstance(ecc, dict) else {}
    return HealthCounters(
        index=index,
        bus_id=bus_id,
        retired_pages_sbe=_int(_get(tree, "Retired Pages/Single Bit ECC")),
        retired_pages_dbe=_int(_get(tree, "Retired Pages/Double Bit ECC")),
        retired_pages_pending=_yes(
            _get(tree, "Retired Pages/Pending Page Blacklist", "Retired Pages/Pending")
        ),
        remapped_rows_correctable=_int(_get(tree, "Remapped Rows/Correctable Error")),
        remapped_rows_uncorrectable=_int(_get(tree, "Remapped Rows/Uncorrectable Error")),
        remapped_rows_pending=_yes(_get(tree, "Remapped Rows/Pending")),
        remapped_rows_failure=_yes(_get(tree, "Remapped Rows/Remapping Failure Occurred")),
        pcie_replays=_int(_get(tree, "PCI/Replays Since Reset")),
        ecc_volatile_corrected=_ecc_total(ecc_tree.get("Volatile"), False),
        ecc_volatile_uncorrected=_ecc_total(ecc_tree.get("Volatile"), True),
        ecc_aggregate_corrected=_ecc_total(ecc_tree.get("Aggregate"), False),
        ecc_aggregate_uncorrected=_ecc_total(ecc_tree.get("Aggregate"), True),
        clock_event_reasons=tuple(active),
        violation_us=violations,
    )


def parse_counters(q_text: str, bus_to_gpu: dict[str, int] | None = None) -> list[HealthCounters]:
    """Every GPU in `nvidia-smi -q`; index from bus_to_gpu, else the order listed (PCI order)."""
    found = []
    for position, (bus, tree) in enumerate(parse_q_tree(q_text).items()):
        index = (bus_to_gpu or {}).get(bus, position)
        found.append(counters_from_tree(index, bus, tree))
    return sorted(found, key=lambda c: c.index)
