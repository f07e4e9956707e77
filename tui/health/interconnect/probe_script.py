"""The interconnect probe, a standalone script run by the serving venv's Python on the host.

It imports only the standard library and torch (the serving venv has torch and
NCCL; servedeck's own packages are not there), so servedeck sends this file's
text on stdin and it re-launches itself from a private temp file:

    python - [--backend nccl|gloo] [--world N] [--max-bytes B] < probe_script.py

The launcher measures the P2P copy matrix (bandwidth and latency per GPU pair,
copy engine) in its own process, then starts one worker process per rank for
the all-reduce sweep (torch.distributed; NCCL on GPUs, gloo on CPU for CI) and
prints one JSON object between `@@servedeck:result` marker lines. Bus bandwidth
follows nccl-tests: busbw = algbw x 2(n-1)/n. NVLink multicast (NVLS) is off.
`p2p_latency_us` is the median of a 4-byte copy plus its synchronize, so it holds
the launch and sync overhead (~10 us) on top of the wire latency: compare pairs
with each other, and with and without P2P, rather than with a hardware figure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

MARK = "@@servedeck:result"
GIB = 1024**3
SMALL_BYTES = 32 * 1024  # latency is what matters up to here
P2P_BYTES = 256 * 1024**2
P2P_SMALL_BYTES = 4


def _sizes(max_bytes: int) -> list[int]:
    sizes, size = [], 8
    while size <= max_bytes:
        sizes.append(size)
        size *= 4 if size < 1024**2 else 2
    return sizes


def _iters(nbytes: int) -> tuple[int, int]:
    """(warmup, timed) iterations: many for small messages, few for 1 GiB."""
    if nbytes <= 1024**2:
        return 5, 40
    if nbytes <= 64 * 1024**2:
        return 3, 10
    return 1, 4


def _sync(torch: Any, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def worker(backend: str, device: str, max_bytes: int) -> None:
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if device == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, rank=rank, world_size=world)
    dev = f"cuda:{rank}" if device == "cuda" else "cpu"
    rows = []
    for nbytes in _sizes(max_bytes):
        tensor = torch.ones(max(nbytes // 4, 1), dtype=torch.float32, device=dev)
        warmup, iters = _iters(nbytes)
        for _ in range(warmup):
            dist.all_reduce(tensor)
        _sync(torch, device)
        dist.barrier()
        started = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(tensor)
        _sync(torch, device)
        took = torch.tensor([(time.perf_counter() - started) / iters], dtype=torch.float64)
        if device == "cuda":
            took = took.to(dev)
        dist.all_reduce(took, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        seconds = float(took.item())
        real_bytes = tensor.numel() * 4
        algbw = real_bytes / seconds / 1e9
        rows.append(
            {
                "bytes": real_bytes,
                "time_us": round(seconds * 1e6, 2),
                "algbw_gbps": float(f"{algbw:.4g}"),
                "busbw_gbps": float(f"{algbw * 2 * (world - 1) / world:.4g}"),
            }
        )
        del tensor
    if rank == 0:
        with open(os.environ["SERVEDECK_PROBE_OUT"], "w") as out:
            json.dump(rows, out)
    dist.barrier()
    dist.destroy_process_group()


def p2p_matrix(
    device: str, world: int
) -> tuple[list[list[float | None]], list[list[float | None]]]:
    """(GB/s, latency us) for each ordered pair: a copy from device i to device j."""
    import torch

    bandwidth: list[list[float | None]] = [[None] * world for _ in range(world)]
    latency: list[list[float | None]] = [[None] * world for _ in range(world)]
    devs = [f"cuda:{i}" if device == "cuda" else "cpu" for i in range(world)]
    big = P2P_BYTES if device == "cuda" else 16 * 1024**2
    for i in range(world):
        src = torch.empty(big // 4, dtype=torch.float32, device=devs[i])
        small_src = torch.empty(P2P_SMALL_BYTES // 4, dtype=torch.float32, device=devs[i])
        for j in range(world):
            if i == j:
                continue
            dst = torch.empty_like(src, device=devs[j])
            small_dst = torch.empty_like(small_src, device=devs[j])
            for _ in range(2):
                dst.copy_(src, non_blocking=True)
            _sync(torch, device)
            reps = 5
            started = time.perf_counter()
            for _ in range(reps):
                dst.copy_(src, non_blocking=True)
            _sync(torch, device)
            bandwidth[i][j] = round(big * reps / (time.perf_counter() - started) / 1e9, 3)
            times = []
            for _ in range(50):
                begun = time.perf_counter()
                small_dst.copy_(small_src)
                _sync(torch, device)
                times.append(time.perf_counter() - begun)
            latency[i][j] = round(statistics.median(times) * 1e6, 2)
            del dst
        del src
    return bandwidth, latency


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(
    me: str, backend: str, device: str, world: int, max_bytes: int, timeout_s: float
) -> dict[str, Any]:
    import torch

    folder = tempfile.mkdtemp(prefix="servedeck-probe-")
    out = os.path.join(folder, "allreduce.json")
    result: dict[str, Any] = {
        "backend": backend,
        "device": device,
        "world_size": world,
        "torch": torch.__version__,
        "gpus": [torch.cuda.get_device_name(i) for i in range(world)] if device == "cuda" else [],
    }
    if device == "cuda":
        nccl = torch.cuda.nccl.version()
        result["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
    started = time.monotonic()
    result["p2p"], result["p2p_latency_us"] = p2p_matrix(device, world)
    result["p2p_s"] = round(time.monotonic() - started, 2)
    env = {
        **os.environ,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(_free_port()),
        "WORLD_SIZE": str(world),
        "SERVEDECK_PROBE_OUT": out,
        "NCCL_NVLS_ENABLE": "0",  # never NVLink multicast
        "OMP_NUM_THREADS": "1",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, me, "--worker", backend, device, str(max_bytes)],
            env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
        )
        for rank in range(world)
    ]
    started = time.monotonic()
    try:
        codes = [p.wait(timeout=max(timeout_s - (time.monotonic() - started), 1)) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        result["error"] = f"all-reduce sweep took over {timeout_s:.0f} s"
        codes = [p.wait() for p in procs]
    result["allreduce_s"] = round(time.monotonic() - started, 2)
    if any(codes) and "error" not in result:
        result["error"] = f"worker exit codes {codes}"
    try:
        with open(out) as handle:
            result["allreduce"] = json.load(handle)
    except (OSError, ValueError):
        result["allreduce"] = []
    shutil.rmtree(folder, ignore_errors=True)
    return result


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        worker(argv[1], argv[2], int(argv[3]))
        return 0
    args = {"--backend": "", "--world": "0", "--max-bytes": str(GIB), "--timeout": "85"}
    for key, value in zip(argv[::2], argv[1::2], strict=False):
        args[key] = value
    import torch

    device = "cuda" if args["--backend"] in ("", "nccl") and torch.cuda.is_available() else "cpu"
    backend = args["--backend"] or ("nccl" if device == "cuda" else "gloo")
    world = int(args["--world"]) or (torch.cuda.device_count() if device == "cuda" else 2)
    me = os.path.abspath(__file__)
    result = launch(me, backend, device, world, int(args["--max-bytes"]), float(args["--timeout"]))
    print(MARK)
    print(json.dumps(result))
    print(MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
