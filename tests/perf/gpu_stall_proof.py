"""The stall verdict's GPU-side signals, proved on one real NVIDIA GPU through NVML.

    python3 tests/perf/gpu_stall_proof.py      (one NVIDIA GPU, torch; no vLLM, no network)

No GPU monitor tells a GPU spinning for nothing from real work; the verdict does it from
utilization and power against the engine's tokens. Here the engine is the simulator's HTTP
server (CPU only, real processes) and the GPU is the real local one: a profile whose host is
this machine (GPUs read through NVML, nothing simulated) and whose endpoint is the simulator,
read with `servedeck status --json` as an operator would:

1. four streams running: `serving`;
2. the simulator's CPU-side hang on (requests stay in flight, no step, no token) while a torch
   process pins the GPU with matmuls that do nothing for the engine: `stalled`, "GPUs busy with
   no tokens", utilization, power and the flat tokens in its evidence;
3. the spinner ended, the hang still on: `stalled`, "GPUs idle with requests queued";
4. the hang ended: `serving` again.

Prints what was read at each step. Exit 0: every verdict as expected; 1: one was not (or a
step failed, said in one line); 2: nothing to prove here (no NVIDIA GPU, no torch).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = (ROOT / "tui").is_dir()  # else servedeck's installed wheel
if CHECKOUT:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tui.gpu.nvml import NvmlGpuSource  # noqa: E402
from tui.gpu.nvml_calls import NvmlUnavailable  # noqa: E402

NO_GPU = "no NVIDIA GPU: nothing to prove here"
STALL_AFTER_S = 10.0  # the profile's stall_after_s: each stalled step's status takes ~N + 2 s
DEADLINE_S = 170.0  # the whole proof, under 3 minutes
STATUS_TIMEOUT_S = STALL_AFTER_S + 45.0
USERS = 4
GPU_BUSY_PCT = 90.0  # the spinner is on once NVML reads this ...
GPU_IDLE_PCT = 10.0  # ... and off once it reads this, twice in a row
SPIN = """
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
print("spinning", flush=True)
while True:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
"""
_SPIN_LINE = re.compile(r"GPU utilization (\d+) % over \d+ GPUs?, (\d+) W")


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the proof and the verdict it must read."""

    name: str
    state: str
    kind: str | None


STEPS = (
    Step("streams, GPU idle", "serving", None),
    Step("CPU hang, GPU pinned", "stalled", "gpu_spin"),
    Step("CPU hang, GPU freed", "stalled", "cpu_block"),
    Step("hang ended", "serving", None),
)


@dataclass(frozen=True, slots=True)
class Reading:
    """What one step read: NVML just before `servedeck status`, then its verdict."""

    step: Step
    util_pct: float | None
    power_w: float | None
    progress: dict[str, Any] | None  # status --json's `progress`
    errors: tuple[str, ...]  # status --json's `errors`, or why it gave no JSON
    took_s: float


def problem(reading: Reading) -> str | None:
    """Why the step's verdict is wrong (one line), or None when it is the expected one."""
    step, progress = reading.step, reading.progress
    if progress is None:
        why = "; ".join(reading.errors) or "status gave no progress verdict"
        return f"{step.name}: no verdict ({why})"
    evidence = [str(line) for line in progress.get("evidence") or ()]
    got = (progress.get("state"), progress.get("kind"))
    if got != (step.state, step.kind):
        return f"{step.name}: expected {step.state}/{step.kind}, read {got[0]}/{got[1]}: " + (
            " | ".join(evidence) or "no evidence"
        )
    if step.state == "stalled" and not any("no generated token" in line for line in evidence):
        return f"{step.name}: the evidence does not say the tokens are flat: {evidence}"
    if step.kind == "gpu_spin":
        spin = next(filter(None, map(_SPIN_LINE.search, evidence)), None)
        if spin is None or float(spin.group(1)) < 80.0:
            return f"{step.name}: the evidence lacks utilization >= 80 % with power: {evidence}"
    return None


def table(readings: Sequence[Reading]) -> str:
    """The readings as a fixed-width table, then each verdict's evidence."""

    def cell(value: float | None, unit: str) -> str:
        return "?" if value is None else f"{value:.0f}{unit}"

    rows = [("step", "NVML util", "power", "verdict", "status s", "ok")]
    for r in readings:
        p = r.progress or {}
        verdict = f"{p.get('state')}" + (f": {p['kind_text']}" if p.get("kind_text") else "")
        rows.append(
            (
                r.step.name,
                cell(r.util_pct, " %"),
                cell(r.power_w, " W"),
                verdict if r.progress else "none",
                f"{r.took_s:.1f}",
                "no" if problem(r) else "yes",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    for r in readings:
        for line in (r.progress or {}).get("evidence") or r.errors:
            lines.append(f"  {r.step.name}: {line}")
    return "\n".join(lines)


async def gpu_reading(source: NvmlGpuSource) -> tuple[float | None, float | None]:
    """(mean utilization %, total power W) of the local GPUs now."""
    snapshot = await source.sample()
    util = [s.utilization_gpu_pct for s in snapshot.samples if s.utilization_gpu_pct is not None]
    power = [s.power_w for s in snapshot.samples if s.power_w is not None]
    return (sum(util) / len(util) if util else None), (sum(power) if power else None)


async def until_util(source: NvmlGpuSource, busy: bool, timeout_s: float) -> None:
    """Until NVML reads the GPU pinned (busy) or freed, twice in a row, or timeout_s."""
    deadline, hits = time.monotonic() + timeout_s, 0
    while hits < 2 and time.monotonic() < deadline:
        util, _ = await gpu_reading(source)
        ok = util is not None and (util >= GPU_BUSY_PCT if busy else util <= GPU_IDLE_PCT)
        hits = hits + 1 if ok else 0
        await asyncio.sleep(0.5)


async def status(profile: Path) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """`servedeck status --json -p profile`: (its progress, its errors)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tui", "status", "--json", "-p", str(profile),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(), STATUS_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise RuntimeError(f"servedeck status gave no answer in {STATUS_TIMEOUT_S:g} s") from None
    try:
        report = json.loads(out)
    except ValueError:
        tail = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return None, (f"status exited {process.returncode}: {tail}",)
    return report.get("progress"), tuple(report.get("errors") or ())


async def read_step(step: Step, source: NvmlGpuSource, profile: Path) -> Reading:
    util, power = await gpu_reading(source)
    started = time.monotonic()
    progress, errors = await status(profile)
    return Reading(step, util, power, progress, errors, time.monotonic() - started)


@contextlib.asynccontextmanager
async def streams(base_url: str, model: str) -> AsyncIterator[None]:
    """Users streaming long completions back to back: requests always in flight."""

    async def user(client: httpx.AsyncClient) -> None:
        body = {"model": model, "prompt": "hi", "max_tokens": 400, "stream": True}
        while True:
            with contextlib.suppress(httpx.HTTPError):
                async with client.stream("POST", "/v1/completions", json=body) as answer:
                    async for _ in answer.aiter_bytes():
                        pass

    async with httpx.AsyncClient(base_url=base_url, timeout=300) as client:
        users = [asyncio.create_task(user(client)) for _ in range(USERS)]
        try:
            yield
        finally:
            for task in users:
                task.cancel()
            await asyncio.gather(*users, return_exceptions=True)


async def hang(base_url: str, kind: str) -> None:
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{base_url}/_sim/fault", json={"hang": kind})
        answer.raise_for_status()


@contextlib.contextmanager
def spinner() -> Iterator[subprocess.Popen[bytes]]:
    """A torch process pinning GPU 0 with matmuls; ended (then killed) on the way out."""
    process = subprocess.Popen(
        [sys.executable, "-c", SPIN], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


async def prove(source: NvmlGpuSource) -> list[Reading]:
    from tui.sim.box import SimBox, SimServerOptions

    options = SimServerOptions(shards=2, tp=1, decode_step_s=0.02, log_interval_s=1.0)
    with tempfile.TemporaryDirectory(prefix="servedeck-stall-proof-") as folder:
        profile = Path(folder) / "proof.toml"
        with SimBox(Path(folder) / "box", load_seconds=1.5, options=options, gpu_count=1) as box:
            box.start()
            if not box.wait_until_ready(60.0):
                raise RuntimeError(f"the simulator never answered /health: {box.log_path}")
            profile.write_text(
                f'[service]\nbase_url = "{box.base_url}"\nstall_after_s = {STALL_AFTER_S:g}\n'
            )
            readings = []
            async with streams(box.base_url, options.served_model_name):
                await asyncio.sleep(2.0)
                readings.append(await read_step(STEPS[0], source, profile))
                await hang(box.base_url, "cpu")
                with spinner() as spin:
                    assert spin.stdout is not None  # piped
                    line = await asyncio.to_thread(spin.stdout.readline)
                    if b"spinning" not in line:
                        raise RuntimeError(f"the torch spinner did not start (exit {spin.poll()})")
                    await until_util(source, busy=True, timeout_s=30.0)
                    readings.append(await read_step(STEPS[1], source, profile))
                await until_util(source, busy=False, timeout_s=30.0)
                readings.append(await read_step(STEPS[2], source, profile))
                await hang(box.base_url, "")
                await asyncio.sleep(2.0)
                readings.append(await read_step(STEPS[3], source, profile))
            return readings


async def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n", 1)[0]).parse_args(argv)
    try:
        source = await NvmlGpuSource.open()
    except NvmlUnavailable:
        print(NO_GPU)
        return 2
    try:
        if importlib.util.find_spec("torch") is None:
            print("torch is not installed: nothing to prove here (the GPU spinner needs it)")
            return 2
        if CHECKOUT:  # the simulator's processes and `servedeck status` import it too
            paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        started = time.monotonic()
        try:
            readings = await asyncio.wait_for(prove(source), DEADLINE_S)
        except TimeoutError:
            print(f"gpu_stall_proof: not done in {DEADLINE_S:g} s (the simulator or a status hung)")
            return 1
        except (RuntimeError, OSError, httpx.HTTPError) as error:
            print(f"gpu_stall_proof: {str(error) or type(error).__name__}")
            return 1
        print(table(readings))
        wrong = [why for why in map(problem, readings) if why]
        for why in wrong:
            print(f"WRONG {why}")
        print(f"{'FAILED' if wrong else 'proved'} in {time.monotonic() - started:.0f} s")
        return 1 if wrong else 0
    finally:
        await source.aclose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
