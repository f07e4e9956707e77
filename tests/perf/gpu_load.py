"""A changing load on every GPU, for measuring the console while the GPUs are busy.

    python tests/perf/gpu_load.py [--seconds 300] [--gpus N] [--max-memory-gib 40]

One process per GPU (as a serving engine has), each running bf16 matrix products
with a duty cycle that changes every second (10-100 % of the second busy, a
different sequence per GPU), so utilization, power, clocks and temperature move
all the time, and holding memory that grows by --step-mib every second up to
--max-memory-gib, then starts again from the bottom. Prints one "ready" line once
every worker holds its first block; ends after --seconds or on SIGTERM/SIGINT.
Needs torch with CUDA.
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
import time

MIB = 1024**2
GIB = 1024**3


def worker(gpu: int, seconds: float, step_mib: int, max_memory_gib: float) -> int:
    import torch

    torch.cuda.set_device(gpu)
    matrix = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    held: list[torch.Tensor] = [torch.empty(step_mib * MIB, dtype=torch.uint8, device="cuda")]
    torch.cuda.synchronize()
    print(f"worker {gpu} ready", flush=True)
    rng = random.Random(gpu * 7919 + 1)
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    end = time.monotonic() + seconds
    while not stop and time.monotonic() < end:
        second_start = time.monotonic()
        duty = rng.uniform(0.1, 1.0)
        while time.monotonic() - second_start < duty and not stop:
            for _ in range(8):
                matrix = (matrix @ matrix).clamp_(-1, 1)
            torch.cuda.synchronize()
        if sum(block.numel() for block in held) >= max_memory_gib * GIB:
            held.clear()  # back to the bottom: the fill starts again
            torch.cuda.empty_cache()
        held.append(torch.empty(step_mib * MIB, dtype=torch.uint8, device="cuda"))
        held[-1].fill_(1)  # touch it, so the driver counts it as used
        rest = 1.0 - (time.monotonic() - second_start)
        if rest > 0 and not stop:
            time.sleep(rest)
    return 0


def gpu_count() -> int:
    result = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(1 for line in result.stdout.splitlines() if line.startswith("GPU "))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--gpus", type=int, help="how many GPUs (default: all)")
    parser.add_argument("--step-mib", type=int, default=256, help="memory added each second")
    parser.add_argument("--max-memory-gib", type=float, default=40.0)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        return worker(args.worker, args.seconds, args.step_mib, args.max_memory_gib)
    count = args.gpus or gpu_count()
    if count < 1:
        print("gpu_load: no NVIDIA GPU found (nvidia-smi -L)", file=sys.stderr)
        return 2
    options = ["--seconds", str(args.seconds), "--step-mib", str(args.step_mib)]
    options += ["--max-memory-gib", str(args.max_memory_gib)]
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", str(gpu), *options],
            stdout=subprocess.PIPE,
            text=True,
        )
        for gpu in range(count)
    ]
    try:
        for process in workers:
            assert process.stdout is not None
            line = process.stdout.readline()
            if "ready" not in line:
                print(f"gpu_load: a worker failed to start ({line.strip()!r})", file=sys.stderr)
                return 1
        print(f"ready: load on {count} GPU(s) for {args.seconds:g} s", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: [p.terminate() for p in workers])
        for process in workers:
            process.wait()
    finally:
        for process in workers:
            if process.poll() is None:
                process.terminate()
        for process in workers:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
