"""How much event-loop time one GPU tick costs, and the whole process's CPU while sampling.

    python tests/perf/gpu_tick.py                 # real NVML when a driver is present
    python tests/perf/gpu_tick.py --fake          # force the fake-NVML shim (8 GPUs)
    python tests/perf/gpu_tick.py --source smi    # SmiGpuSource over LocalHost
    python tests/perf/gpu_tick.py --app-cpu 60    # CPU seconds for 60 s of sampling at 1 s

Without a driver it uses the fake NVML of tests/support/fake_nvml.py with modelled per-call
latencies (PCIe throughput ~20 ms, others tens of microseconds): the figures then
show the design (slow calls off the loop), not a real driver's cost. Printed
figures: loop-thread CPU per sample() (time.thread_time on the loop thread, which
excludes the worker threads), the worst event-loop lag seen by a 5 ms ticker while
sampling, and what a naive on-loop tick (fast + PCIe TX/RX for every GPU) costs.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


from tui.gpu import nvml as nvml_module
from tui.gpu.model import GpuSource
from tui.gpu.nvml import NvmlGpuSource
from tui.gpu.nvml_calls import nvml_driver_present
from tui.gpu.smi import SmiGpuSource
from tui.hosts.local import LocalHost


def install_fake(gpus: int) -> None:
    from tests.support.fake_nvml import REALISTIC_LATENCY_S, FakeNvml, h200_box

    FakeNvml(h200_box(gpus), latency_s=REALISTIC_LATENCY_S).install()


async def open_source(kind: str, interval_s: float) -> GpuSource:
    if kind == "smi":
        return SmiGpuSource(LocalHost(), interval_s=interval_s)
    return await NvmlGpuSource.open(slow_interval_s=5.0)


async def _lag_probe(stop: asyncio.Event, lags: list[float], period_s: float = 0.005) -> None:
    while not stop.is_set():
        before = time.perf_counter()
        await asyncio.sleep(period_s)
        lags.append(time.perf_counter() - before - period_s)


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
    return (
        f"median {statistics.median(values) * 1e3:.3f} ms, p95 {p95 * 1e3:.3f} ms, "
        f"max {values[-1] * 1e3:.3f} ms"
    )


async def measure_ticks(source: GpuSource, ticks: int, interval_s: float) -> None:
    snapshot = await source.sample()  # warm-up (first nvidia-smi lines, caches)
    print(f"source {source.name}: {snapshot.gpu_count} GPUs, available={snapshot.available}")
    loop_cpu, wall, lags = [], [], []
    stop = asyncio.Event()
    probe = asyncio.create_task(_lag_probe(stop, lags))
    for _ in range(ticks):
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        await source.sample()
        loop_cpu.append(time.thread_time() - cpu0)
        wall.append(time.perf_counter() - wall0)
        await asyncio.sleep(interval_s)
    stop.set()
    await probe
    print(f"loop-thread CPU per sample(): {_ms(loop_cpu)}  ({ticks} ticks)")
    print(f"wall time per sample():       {_ms(wall)}")
    print(f"event-loop lag while sampling (5 ms ticker): {_ms(lags)}")
    if isinstance(source, NvmlGpuSource):
        handles = list(source._handles)
        started = time.perf_counter()
        source._sample_blocking()
        fast_s = time.perf_counter() - started
        started = time.perf_counter()
        for handle in handles:
            nvml_module._read_slow(handle)
        slow_s = time.perf_counter() - started
        started = time.perf_counter()
        for index, handle in enumerate(handles):
            source._read_process_util_into(index, handle)
        util_s = time.perf_counter() - started
        print(f"worker-thread fast pass: {fast_s * 1e3:.2f} ms for {len(handles)} GPUs")
        print(
            f"per-process utilization read: {util_s * 1e3:.2f} ms for {len(handles)} GPUs "
            "(background thread, every 5 s)"
        )
        naive_ms = (fast_s + slow_s) * 1e3
        print(
            f"naive on-loop tick (fast + PCIe TX/RX + ECC + throttle): {naive_ms:.1f}"
            f" ms (slow part {slow_s * 1e3:.1f} ms, now in the background thread every 5 s)"
        )


async def measure_app_cpu(source: GpuSource, seconds: float, interval_s: float) -> None:
    await source.sample()
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    ticks = 0
    while time.perf_counter() - started < seconds:
        await source.sample()
        ticks += 1
        await asyncio.sleep(interval_s)
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    elapsed = time.perf_counter() - started
    cpu_s = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    print(
        f"whole-process CPU: {cpu_s:.3f} s over {elapsed:.1f} s ({ticks} samples at "
        f"{interval_s:g} s) = {100 * cpu_s / elapsed:.2f}% of one core"
    )


async def main_async(args: argparse.Namespace) -> int:
    if args.source == "nvml":
        if args.fake or not nvml_driver_present():
            install_fake(args.gpus)
            print(
                f"NOTE: fake NVML shim ({args.gpus} GPUs, modelled per-call latencies; "
                "no NVIDIA driver here): figures show the design, not a real driver"
            )
        else:
            print("real NVML driver")
    source = await open_source(args.source, args.interval)
    try:
        if args.app_cpu:
            await measure_app_cpu(source, args.app_cpu, args.interval)
        else:
            await measure_ticks(source, args.ticks, args.tick_gap)
    finally:
        await source.aclose()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=("nvml", "smi"), default="nvml")
    parser.add_argument("--fake", action="store_true", help="use the fake NVML shim")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs of the fake shim")
    parser.add_argument("--ticks", type=int, default=50)
    parser.add_argument("--tick-gap", type=float, default=0.05, help="seconds between ticks")
    parser.add_argument("--interval", type=float, default=1.0, help="sampling interval, s")
    parser.add_argument("--app-cpu", type=float, metavar="SECONDS", help="CPU-use mode")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
