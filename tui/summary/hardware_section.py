"""The state summary's "Hardware health" section: doctor findings, GPU health, last probe.

Collected with the rest of the summary by `tui.ops.hardware_health` (read-only: the
probe is never run from there, only its last recorded result for this host is quoted).
"""

from __future__ import annotations

from typing import Any

from tui.ops.hardware_health import HardwareHealth
from tui.summary.mdtable import table


def _probe_lines(probe: dict[str, Any] | None) -> list[str]:
    lines = ["### Interconnect probe", ""]
    if not probe:
        return [
            *lines,
            "Not run on this host. `servedeck probe` measures P2P and all-reduce bandwidth "
            "(idle GPUs only).",
            "",
        ]
    rows = [
        (r.get("bytes"), r.get("time_us"), r.get("algbw_gbps"), r.get("busbw_gbps"))
        for r in probe.get("allreduce", [])
        if isinstance(r, dict) and r.get("bytes", 0) in (8, 32 * 1024, 64 * 1024**2, 1024**3)
    ]
    return [
        *lines,
        f"Verdict: {probe.get('verdict', 'n/a')}",
        "",
        *table(["bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)"], rows, right=(0, 1, 2, 3)),
    ]


def hardware_health_markdown(hh: HardwareHealth | None) -> list[str]:
    if hh is None:
        return []
    lines = ["## Hardware health", "", "### Interconnect findings", ""]
    ic = hh.interconnect
    if ic is not None:
        lines += [f"- {note}" for note in ic.notes]
        if ic.findings:
            rows = [
                (f.severity, f.check, "box" if f.gpu is None else f"GPU{f.gpu}", f.evidence, f.fix)
                for f in ic.findings
            ]
            lines += table(["severity", "check", "GPU", "evidence", "fix"], rows)
        else:
            lines += ["No interconnect problem found.", ""]
    lines += ["### GPU health", ""]
    health = hh.health
    if health is not None:
        lines += [f"- {note}" for note in health.notes]
        gpu_rows: list[tuple[object, ...]] = []
        for gpu in health.gpus:
            c = gpu.counters
            gpu_rows.append(
                (
                    f"GPU{gpu.index}",
                    gpu.bus_id,
                    gpu.badge,
                    ", ".join(f"{e.number_text} ({e.name})" for e in gpu.events) or "none",
                    f"{c.ecc_volatile_uncorrected}/{c.ecc_aggregate_uncorrected}" if c else None,
                    ("yes" if c.remapped_rows_pending else "no") if c else None,
                    c.pcie_replays if c else None,
                    "n/a" if c is None or c.nvlink_errors is None else c.nvlink_errors,
                    "; ".join(r for r in gpu.reasons if not r.startswith("XID ")) or "-",
                )
            )
        if gpu_rows:
            headers = ["GPU", "bus", "badge", "XIDs", "ECC unc. vol/agg", "remap pending"]
            lines += table(
                [*headers, "PCIe replays", "NVLink errors", "other"], gpu_rows, right=(6, 7)
            )
        lines += [
            f"- XID {e.number_text} on {e.bus_id} (no GPU answers there): {e.name}"
            for e in health.unmatched_events
        ]
    return [*lines, *_probe_lines(hh.probe)]
