"""The interconnect probe: refuse unless the GPUs are idle, run the fixed script with the
serving venv's Python over the Host, and compare with published figures by class.

The script (probe_script.py) is sent on stdin and re-launched from a private temp
file on the host, so nothing is quoted through a login shell and nothing stays behind.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tui.core.formatting import GIB, gib
from tui.gpu.model import GpuBoxSnapshot
from tui.health.findings import CRIT, WARN
from tui.health.interconnect.rules import InterconnectReport
from tui.hosts.base import Host

MARK = "@@servedeck:result"
SCRIPT_PATH = Path(__file__).with_name("probe_script.py")
BUSY_UTILIZATION_PCT = 5.0
# A GPU holding more than this is in use (a CUDA context alone is ~0.5 GiB).
BUSY_MEMORY_BYTES = 2 * GIB

# Figures by interconnect class, GB/s (busbw for 8 GPUs, all-reduce, NCCL) and us.
# PCIe Gen5: published 8-GPU PCIe Gen5 box figures (well configured vs NCCL defaults;
# P2P one way within a NUMA node; P2P write latency with and without P2P).
# The rest are approximate public nccl-tests / p2pBandwidthLatencyTest figures:
# take them as a scale, not a specification.
REFERENCE: dict[str, dict[str, object]] = {
    "pcie_gen5_x16": {
        "busbw_gbps": [37.0, 41.0],
        "busbw_defaults_gbps": 22.0,
        "p2p_gbps": [53.0, 56.0],
        "p2p_latency_us": 0.4,
        "no_p2p_latency_us": 14.0,
        "source": "published 8-GPU PCIe Gen5 figures",
    },
    "pcie_gen4_x16": {
        "busbw_gbps": [18.0, 21.0],
        "p2p_gbps": [24.0, 26.0],
        "p2p_latency_us": 0.5,
        "source": "approximate (PCIe Gen4 x16 is half of Gen5)",
    },
    "nvlink4": {
        "busbw_gbps": [340.0, 380.0],
        "p2p_gbps": [350.0, 390.0],
        "p2p_latency_us": 0.3,
        "source": "approximate HGX H100/H200 nccl-tests figures, NVLS off",
    },
    "nvlink3": {
        "busbw_gbps": [220.0, 235.0],
        "p2p_gbps": [230.0, 270.0],
        "p2p_latency_us": 0.3,
        "source": "approximate HGX A100 nccl-tests figures",
    },
}


@dataclass(frozen=True, slots=True)
class ProbeResult:
    p2p: tuple[tuple[float | None, ...], ...]
    p2p_latency_us: tuple[tuple[float | None, ...], ...]
    allreduce: tuple[dict[str, float], ...]
    interconnect_class: str
    reference: dict[str, object]
    verdict: str
    raw: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "p2p": [list(row) for row in self.p2p],
            "p2p_latency_us": [list(row) for row in self.p2p_latency_us],
            "allreduce": list(self.allreduce),
            "interconnect_class": self.interconnect_class,
            "reference": self.reference,
            "verdict": self.verdict,
            **{
                k: v for k, v in self.raw.items() if k not in ("p2p", "p2p_latency_us", "allreduce")
            },
        }


def busy_gpus(snapshot: GpuBoxSnapshot) -> list[str]:
    """One line per GPU in use: who holds it (pid, name, memory) or how busy it is."""
    held = []
    for sample in snapshot.samples:
        procs = ", ".join(
            f"pid {p.pid} {p.process_name or '?'} ({gib(p.used_memory_bytes or 0)})"
            for p in sample.processes
        )
        if procs:
            held.append(f"GPU{sample.index} held by {procs}")
        elif (sample.utilization_gpu_pct or 0) >= BUSY_UTILIZATION_PCT:
            held.append(f"GPU{sample.index} busy ({sample.utilization_gpu_pct:.0f}% utilization)")
        elif (sample.memory_used_bytes or 0) >= BUSY_MEMORY_BYTES:
            used = (sample.memory_used_bytes or 0) / GIB
            held.append(f"GPU{sample.index} holds {used:.1f} GiB (a process the driver hides)")
    return held


def refusal(unit_active: str | None, snapshot: GpuBoxSnapshot) -> str | None:
    """Why the probe must not run now, or None: it needs every GPU to itself."""
    if unit_active is not None:
        return f"the service is active ({unit_active}): stop it first"
    if not snapshot.available:
        return f"GPUs unreadable: {snapshot.error or 'no driver'}"
    held = busy_gpus(snapshot)
    if held:
        return "GPUs in use: " + "; ".join(held)
    return None


def bootstrap(args: list[str]) -> str:
    """The stdin text for `python -`: write the script to a temp file, run it, remove it."""
    source = SCRIPT_PATH.read_text()
    return (
        "import os, runpy, shutil, sys, tempfile\n"
        f"SOURCE = {source!r}\n"
        "folder = tempfile.mkdtemp(prefix='servedeck-probe-')\n"
        "path = os.path.join(folder, 'probe.py')\n"
        "with open(path, 'w') as handle:\n"
        "    handle.write(SOURCE)\n"
        f"sys.argv = [path, *{args!r}]\n"
        "try:\n"
        "    runpy.run_path(path, run_name='__main__')\n"
        "finally:\n"
        "    shutil.rmtree(folder, ignore_errors=True)\n"
    )


def parse_output(stdout: str) -> dict[str, object]:
    """The JSON between the two marker lines; a clear error otherwise."""
    parts = stdout.split(MARK)
    if len(parts) < 3:
        tail = stdout.strip().splitlines()[-1:] or ["no output"]
        raise ValueError(f"the probe printed no result ({tail[0][:160]})")
    data = json.loads(parts[1])
    if not isinstance(data, dict):
        raise ValueError("the probe's result is not a JSON object")
    return data


def classify(report: InterconnectReport | None) -> str:
    """The reference class: NVLink generation from `topo -m`, else PCIe generation."""
    cells = [c for row in (report.topology if report else ()) for c in row if c.startswith("NV")]
    if cells:
        links = max(int(m.group(1)) for c in cells if (m := re.match(r"NV(\d+)", c)))
        return "nvlink4" if links >= 18 else "nvlink3"
    text = " ".join(f.evidence for f in (report.findings if report else ()))
    return "pcie_gen4_x16" if "max Gen4" in text else "pcie_gen5_x16"


def _doctor_causes(report: InterconnectReport | None) -> list[str]:
    if report is None:
        return []
    return sorted(
        {
            f"{f.check}" + (f" (GPU{f.gpu})" if f.gpu is not None else "")
            for f in report.findings
            if f.severity in (CRIT, WARN)
        }
    )


def _items(value: object) -> list[Any]:
    """A list from the probe's JSON; a missing (or null) one is empty."""
    return cast("list[Any]", value or [])


def judge(raw: dict[str, object], doctor: InterconnectReport | None) -> ProbeResult:
    """Compare the measured peak busbw and median P2P with the class's reference."""
    rows = tuple(r for r in _items(raw.get("allreduce")) if isinstance(r, dict))
    p2p = tuple(tuple(row) for row in _items(raw.get("p2p")))
    lat = tuple(tuple(row) for row in _items(raw.get("p2p_latency_us")))
    world = int(raw.get("world_size", len(p2p)) or 0)  # type: ignore[call-overload]
    cls = classify(doctor)
    ref = REFERENCE[cls]
    lo, hi = cast("list[float]", ref["busbw_gbps"])
    big = [r["busbw_gbps"] for r in rows if r.get("bytes", 0) >= 64 * 1024**2] or [
        r["busbw_gbps"] for r in rows
    ]
    pairs = [v for row in p2p for v in row if isinstance(v, int | float)]
    parts = []
    if raw.get("error"):
        parts.append(f"probe error: {raw['error']}")
    if big:
        peak = max(big)
        gap = (1 - peak / lo) * 100
        if peak >= 0.9 * lo:
            parts.append(
                f"all-reduce busbw {peak:.1f} GB/s: at the {cls} reference ({lo:.0f}-{hi:.0f})"
            )
        else:
            parts.append(
                f"all-reduce busbw {peak:.1f} GB/s: {gap:.0f}% below the {cls} reference "
                f"({lo:.0f}-{hi:.0f} GB/s)"
            )
    if pairs:
        p_lo = ref["p2p_gbps"][0]  # type: ignore[index]
        median = statistics.median(pairs)
        parts.append(f"P2P median {median:.1f} GB/s (reference {p_lo:.0f}+)")
    small = [r["time_us"] for r in rows if r.get("bytes", 0) <= 32 * 1024]
    if small:
        parts.append(f"small-message latency {min(small):.0f}-{max(small):.0f} us")
    causes = _doctor_causes(doctor)
    below = bool(big) and max(big) < 0.9 * lo
    if below:
        parts.append(
            "likely cause: " + ", ".join(causes) if causes else "no doctor finding explains the gap"
        )
    if world and world < 8:
        parts.append(f"note: {world} GPUs measured; the reference is for 8")
    return ProbeResult(
        p2p=p2p,
        p2p_latency_us=lat,
        allreduce=rows,
        interconnect_class=cls,
        reference={"class": cls, **ref},
        verdict="; ".join(parts) or "no measurement",
        raw=raw,
    )


async def run_probe_script(
    host: Host, python: str, args: list[str], timeout_s: float = 120.0
) -> dict[str, object]:
    """Run the script with the serving venv's Python on the host; raises ValueError on garbage."""
    result = await host.run([python, "-"], timeout_s=timeout_s, stdin_text=bootstrap(args))
    if not result.ok and MARK not in result.stdout:
        tail = (result.stderr.strip().splitlines() or [f"exit {result.exit_status}"])[-1]
        raise ValueError(f"{python} exited {result.exit_status}: {tail[:200]}")
    return parse_output(result.stdout)
