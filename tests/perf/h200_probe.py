"""The interconnect doctor, GPU health and the probe on a real NVIDIA box.

    python3 tests/perf/h200_probe.py OUT_DIR      (needs torch with CUDA, and GPUs)

1. `doctor --interconnect` over a LocalHost: findings, seconds taken; the raw tool
   output of this box (topo -p2p r/w, nvidia-smi -q -d MEMORY, lspci -D -vvv, links)
   saved under OUT_DIR/fixtures/ to replace the hand-written test fixtures;
2. the GPU health report (nvidia-smi -q counters, kernel-log XIDs);
3. the probe's refusal while a CUDA process holds 4 GiB on GPU 0 (it must name the pid);
4. the probe itself on every GPU (NCCL, 8 B .. 1 GiB), timed, judged against the
   reference table; written to OUT_DIR/probe-h200.json in the `servedeck probe --json`
   shape plus the figures. Copy it to tests/perf/results/probe-h200.json.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tui.gpu.nvml import NvmlGpuSource  # noqa: E402
from tui.health.health_run import collect_health  # noqa: E402
from tui.health.interconnect.collect import collect_interconnect  # noqa: E402
from tui.health.interconnect.doctor_run import run_interconnect  # noqa: E402
from tui.health.interconnect.probe import judge, refusal, run_probe_script  # noqa: E402
from tui.hosts.local import LocalHost  # noqa: E402

HOLDER = (
    "import sys, time, torch\n"
    "x = torch.empty(4 << 30, dtype=torch.uint8, device='cuda:0'); x.fill_(1)\n"
    "torch.cuda.synchronize(); open(sys.argv[1], 'w').write('ready'); time.sleep(600)\n"
)


async def snapshot():  # type: ignore[no-untyped-def]
    source = await NvmlGpuSource.open()
    try:
        await source.sample()
        await asyncio.sleep(1.0)
        return await source.sample()
    finally:
        await source.aclose()


async def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    host = LocalHost()
    figures: dict[str, object] = {}

    sections, took_s = await collect_interconnect(host)
    fixtures = out / "fixtures"
    fixtures.mkdir(exist_ok=True)
    for name, text in sections.items():
        (fixtures / f"{name}.txt").write_text(text + "\n")
    doctor = await run_interconnect(host, None)
    figures["doctor_s"] = round(took_s, 3)
    (out / "interconnect-h200.json").write_text(json.dumps(doctor.as_dict(), indent=2))
    print(f"doctor --interconnect: {len(doctor.findings)} finding(s) in {took_s:.2f} s")
    for finding in doctor.findings:
        print(f"  [{finding.severity}] {finding.check} GPU{finding.gpu}: {finding.evidence}")

    health = await collect_health(host)
    (out / "health-h200.json").write_text(json.dumps(health.as_dict(), indent=2))
    print("health: " + ", ".join(f"GPU{g.index} {g.badge}" for g in health.gpus))

    with tempfile.TemporaryDirectory() as folder:
        ready = Path(folder) / "ready"
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(ready)])
        try:
            deadline = time.monotonic() + 120
            while not ready.exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            busy = refusal(None, await snapshot())
        finally:
            holder.kill()
            holder.wait()
    figures["refusal_while_busy"] = busy
    print(f"refusal with a 4 GiB holder (pid {holder.pid}): {busy}")
    assert busy is not None and f"pid {holder.pid}" in busy, busy
    time.sleep(3.0)  # the driver frees the holder's memory
    idle = refusal(None, await snapshot())
    figures["refusal_when_idle"] = idle
    if idle:
        print(f"probe refused after the holder ended: {idle}")
        return 1

    started = time.monotonic()
    raw = await run_probe_script(host, sys.executable, [], timeout_s=300)
    figures["probe_s"] = round(time.monotonic() - started, 2)
    result = judge(raw, doctor).as_dict()
    result["figures"] = figures
    (out / "probe-h200.json").write_text(json.dumps(result, indent=2))
    print(f"probe: {figures['probe_s']} s on {raw.get('world_size')} GPU(s)")
    for row in result["allreduce"]:  # type: ignore[attr-defined]
        print(
            f"  {row['bytes']:>12,} B {row['time_us']:>10.1f} us "
            f"busbw {row['busbw_gbps']:>8.2f} GB/s"
        )
    print("  p2p GB/s:", result["p2p"])
    print(f"verdict: {result['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1] if len(sys.argv) > 1 else "h200-probe-out"))))
