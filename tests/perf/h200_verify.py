"""Verify the GPU sources on a real NVIDIA machine and capture fixtures from it.

    python tests/perf/h200_verify.py [OUT_DIR]      (default ./h200-out; needs torch + a GPU)

1. starts a CUDA process holding 4 GiB on GPU 0 (torch, in a subprocess that sleeps);
2. samples NvmlGpuSource and SmiGpuSource (over LocalHost) and prints whether they
   agree (same GPU count, memory within 1% of total, same PIDs) as a table and JSON, with
   NVML's per-process SM % of the idle holder (0.0 where the GPU reports it, else None);
3. saves raw nvidia-smi output (the query stream, compute apps, topo -m, --version)
   in OUT_DIR as test fixtures (tests/support/fixtures/nvidia_smi/ takes them as they are);
4. saves `python -m tui gpus --json`;
5. renders the GPU pane headlessly at 160x50 to OUT_DIR/gpus-h200.svg;
6. runs tests/perf/gpu_tick.py (tick costs, then --app-cpu 60) and saves its output.
Without a driver it stops at once with a one-line message.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pynvml  # noqa: E402

from tui.gpu.history import GpuHistory  # noqa: E402
from tui.gpu.model import GpuBoxSnapshot  # noqa: E402
from tui.gpu.nvml import NvmlGpuSource  # noqa: E402
from tui.gpu.smi import SmiGpuSource, compute_apps_argv, query_gpu_argv  # noqa: E402
from tui.hosts.local import LocalHost  # noqa: E402

HOLD_GIB = 4
HOLDER = (
    "import time, torch\n"
    f"x = torch.empty({HOLD_GIB} << 30, dtype=torch.uint8, device='cuda')\n"
    "torch.cuda.synchronize()\n"
    "print('ready', flush=True)\n"
    "time.sleep(900)\n"
)


def fail(message: str) -> None:
    print(f"h200_verify: {message}", file=sys.stderr)
    raise SystemExit(2)


def check_driver() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        fail(f"no NVIDIA driver here ({error}); run this on a machine with NVIDIA GPUs")
    pynvml.nvmlShutdown()


def start_holder() -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until CUDA is up (or the process died)
    if line.strip() != "ready":
        process.kill()
        fail(f"the CUDA holder process failed: {process.stderr.read().strip()[-400:]}")
    return process


def run_capture(argv: list[str], out: Path, timeout_s: float = 60.0) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    out.write_text(result.stdout)
    return result.stdout


def capture_stream(out: Path, seconds: float = 3.5) -> None:
    """A few ticks of the real `-lms` stream, exactly as SmiGpuSource reads it."""
    process = subprocess.Popen(query_gpu_argv(1.0), stdout=subprocess.PIPE, text=True)
    time.sleep(seconds)
    process.terminate()
    stdout, _ = process.communicate(timeout=10)
    out.write_text(stdout)


def compare(nvml: GpuBoxSnapshot, smi: GpuBoxSnapshot, holder_pid: int) -> dict[str, Any]:
    rows = []
    for a, b in zip(nvml.samples, smi.samples, strict=False):
        total = a.memory_total_bytes or 1
        diff = abs((a.memory_used_bytes or 0) - (b.memory_used_bytes or 0)) / total
        pids_a, pids_b = sorted({p.pid for p in a.processes}), sorted({p.pid for p in b.processes})
        rows.append(
            {
                "gpu": a.index,
                "nvml_used_bytes": a.memory_used_bytes,
                "smi_used_bytes": b.memory_used_bytes,
                "memory_diff_pct_of_total": round(100 * diff, 3),
                "memory_agrees": diff <= 0.01,
                "nvml_pids": pids_a,
                "smi_pids": pids_b,
                "pids_agree": pids_a == pids_b,
            }
        )
    holder_seen = any(holder_pid in r["nvml_pids"] for r in rows) or any(
        holder_pid in r["smi_pids"] for r in rows
    )
    # NVML's per-process SM share of the sleeping holder: 0.0 where the GPU answers
    # nvmlDeviceGetProcessUtilization (it does no work), None where it does not
    holder_sm = [
        p.sm_util_percent for s in nvml.samples for p in s.processes if p.pid == holder_pid
    ]
    return {
        "gpu_count_nvml": nvml.gpu_count,
        "gpu_count_smi": smi.gpu_count,
        "gpu_count_agrees": nvml.gpu_count == smi.gpu_count,
        "holder_pid": holder_pid,
        "holder_pid_seen": holder_seen,
        "holder_sm_util_percent": holder_sm[0] if holder_sm else "not listed",
        "all_agree": nvml.gpu_count == smi.gpu_count
        and all(r["memory_agrees"] and r["pids_agree"] for r in rows),
        "gpus": rows,
        "driver_version": nvml.driver_version,
        "cuda_version": nvml.cuda_version,
        "smi_driver_version": smi.driver_version,
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"{'GPU':>3} {'NVML GiB':>9} {'SMI GiB':>9} {'diff %':>7} {'mem':>4} {'pids':>5}  PIDs")
    for row in report["gpus"]:
        gib = [(row[k] or 0) / 1024**3 for k in ("nvml_used_bytes", "smi_used_bytes")]
        print(
            f"{row['gpu']:>3} {gib[0]:>9.2f} {gib[1]:>9.2f} {row['memory_diff_pct_of_total']:>7.3f}"
            f" {'ok' if row['memory_agrees'] else 'NO':>4} {'ok' if row['pids_agree'] else 'NO':>5}"
            f"  nvml={row['nvml_pids']} smi={row['smi_pids']}"
        )
    print(
        f"GPU count nvml={report['gpu_count_nvml']} smi={report['gpu_count_smi']}; holder pid "
        f"{report['holder_pid']} seen={report['holder_pid_seen']} (NVML SM % "
        f"{report['holder_sm_util_percent']}); all agree={report['all_agree']}"
    )


async def sample_both(holder_pid: int) -> tuple[GpuBoxSnapshot, GpuBoxSnapshot, list]:
    nvml = await NvmlGpuSource.open(slow_interval_s=1.0)
    smi = SmiGpuSource(LocalHost(), interval_s=1.0, apps_interval_s=1.0)
    history: list[GpuBoxSnapshot] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            a, b = await nvml.sample(), await smi.sample()
            history.append(a)
            smi_pids = {p.pid for p in b.processes()}
            if (holder_pid in smi_pids and b.topology) or time.monotonic() > deadline:
                break
            await asyncio.sleep(1.0)
        for _ in range(5):  # a few more ticks for the sparklines and slow metrics
            await asyncio.sleep(1.0)
            history.append(await nvml.sample())
        a, b = await nvml.sample(), await smi.sample()
        return a, b, history
    finally:
        await nvml.aclose()
        await smi.aclose()


async def render_pane(history: list[GpuBoxSnapshot], out: Path) -> None:
    from tests.support.gpu_pane_app import GpuPaneApp

    trends = GpuHistory(target_fraction=0.9)
    for snapshot in history:
        trends.add(snapshot)
    app = GpuPaneApp(history[-1], trends.trends())
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        app.save_screenshot(filename="gpus-h200.svg", path=str(out))


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "h200-out").resolve()
    check_driver()
    out.mkdir(parents=True, exist_ok=True)
    holder = start_holder()
    try:
        print(f"holder pid {holder.pid} holds {HOLD_GIB} GiB on GPU 0")
        nvml, smi, history = asyncio.run(sample_both(holder.pid))
        report = compare(nvml, smi, holder.pid)
        print_table(report)
        (out / "agreement.json").write_text(json.dumps(report, indent=2))
        print(json.dumps(report, indent=2))
        capture_stream(out / "h200_query_gpu.csv")
        run_capture(compute_apps_argv(), out / "h200_compute_apps.csv")
        run_capture(["nvidia-smi", "topo", "-m"], out / "h200_topo_m.txt")
        run_capture(["nvidia-smi", "--version"], out / "h200_version.txt")
        run_capture(["nvidia-smi"], out / "nvidia_smi.txt")
        env = {**os.environ, "PYTHONPATH": f"{ROOT}:{os.environ.get('PYTHONPATH', '')}"}
        gpus = subprocess.run(
            [sys.executable, "-m", "tui", "gpus", "--json"],
            capture_output=True, text=True, timeout=120, cwd=ROOT, env=env,
        )  # fmt: skip
        (out / "gpus.json").write_text(gpus.stdout)
        print(f"servedeck gpus --json: exit {gpus.returncode}, {len(gpus.stdout)} bytes")
        asyncio.run(render_pane(history, out))
        print(f"wrote {out / 'gpus-h200.svg'}")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    tick = ROOT / "tests" / "perf" / "gpu_tick.py"
    lines = []
    for extra in ([], ["--source", "smi"], ["--app-cpu", "60"]):
        result = subprocess.run(
            [sys.executable, str(tick), *extra], capture_output=True, text=True, timeout=300
        )
        lines.append(f"$ gpu_tick.py {' '.join(extra)}\n{result.stdout}{result.stderr}")
        print(lines[-1])
    (out / "gpu_tick.txt").write_text("\n".join(lines))
    print(f"all outputs in {out}")
    return 0 if report["all_agree"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
