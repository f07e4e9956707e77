"""The driver's PCIe byte counters against nvmlDeviceGetPcieThroughput, on a real GPU.

    python3 tests/perf/pcie_counters_check.py [--seconds 5]

The console's slow read takes PCIe throughput from NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES
(the mean over its interval) where the driver keeps them, instead of the driver's ~20 ms
sample per direction. This says, for GPU 0, whether the counters are kept, and compares
them over the same window, idle and then while torch copies a pinned 256 MiB buffer to the
GPU and back, with the mean of the driver's samples taken every 0.25 s and with what the
copies themselves moved (the truth: host to GPU is the GPU's RX, GPU to host its TX). The
copy window starts only once the copies run (torch's import and CUDA's start take seconds:
a first run measured before them compared two idle links). Prints each window's rates
and the CPU time each way of reading costs. Exit 1 when the counters are kept but their
copy-window rates are more than 25 % from what the copies moved. Needs nvidia-ml-py and
torch with CUDA.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pynvml

from tui.gpu.nvml_calls import pcie_rates, read_pcie_counters

MIB = 1024**2


class CopyLoad:
    """Copies a pinned buffer to GPU 0 and back until stopped; counts the bytes it moved."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.lock = threading.Lock()
        self.to_gpu_bytes = 0
        self.from_gpu_bytes = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import torch

        size = 256 * MIB
        host = torch.empty(size, dtype=torch.uint8).pin_memory()
        device = torch.empty(size, dtype=torch.uint8, device="cuda:0")
        while not self.stop.is_set():
            device.copy_(host, non_blocking=True)
            host.copy_(device, non_blocking=True)
            torch.cuda.synchronize()
            with self.lock:
                self.to_gpu_bytes += size
                self.from_gpu_bytes += size
            self.ready.set()

    def moved(self) -> tuple[int, int]:
        with self.lock:
            return self.from_gpu_bytes, self.to_gpu_bytes  # the GPU's TX, RX


def window(handle: object, seconds: float, load: CopyLoad | None) -> dict[str, float | None]:
    before = read_pcie_counters(handle)
    moved_before = load.moved() if load else (0, 0)
    started_s = time.monotonic()
    samples: list[tuple[int, int]] = []
    sample_cpu_s = 0.0
    deadline = started_s + seconds
    while time.monotonic() < deadline:
        started = time.process_time()
        tx = pynvml.nvmlDeviceGetPcieThroughput(handle, pynvml.NVML_PCIE_UTIL_TX_BYTES)
        rx = pynvml.nvmlDeviceGetPcieThroughput(handle, pynvml.NVML_PCIE_UTIL_RX_BYTES)
        sample_cpu_s += time.process_time() - started
        samples.append((tx, rx))
        time.sleep(0.25)
    started = time.process_time()
    after = read_pcie_counters(handle)
    counter_cpu_s = time.process_time() - started
    moved_after = load.moved() if load else (0, 0)
    elapsed_s = time.monotonic() - started_s
    rates = pcie_rates(before, after)
    return {
        "counter_tx": rates[0] if rates else None,
        "counter_rx": rates[1] if rates else None,
        "sample_tx": sum(s[0] for s in samples) / len(samples) * 1024,
        "sample_rx": sum(s[1] for s in samples) / len(samples) * 1024,
        "copies_tx": (moved_after[0] - moved_before[0]) / elapsed_s,
        "copies_rx": (moved_after[1] - moved_before[1]) / elapsed_s,
        "sample_cpu_ms_per_read": sample_cpu_s / len(samples) * 1000,
        "counter_cpu_ms_per_read": counter_cpu_s * 1000,
    }


def show(name: str, figures: dict[str, float | None]) -> None:
    def rate(value: float | None) -> str:
        return "unknown" if value is None else f"{value / MIB:10.1f} MiB/s"

    print(
        f"{name:6} counters TX {rate(figures['counter_tx'])} RX {rate(figures['counter_rx'])}"
        f" | samples TX {rate(figures['sample_tx'])} RX {rate(figures['sample_rx'])}"
        f" | copies TX {rate(figures['copies_tx'])} RX {rate(figures['copies_rx'])}"
        f" | CPU per read: samples (both ways) {figures['sample_cpu_ms_per_read']:.2f} ms,"
        f" counters {figures['counter_cpu_ms_per_read']:.3f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    print(
        f"GPU 0: {pynvml.nvmlDeviceGetName(handle)}, driver {pynvml.nvmlSystemGetDriverVersion()}"
    )
    first = read_pcie_counters(handle)
    print(f"counters kept: {first is not None} ({first})")
    show("idle", window(handle, args.seconds, None))
    load = CopyLoad()
    load.thread.start()
    if not load.ready.wait(120):
        print("the copies did not start within 120 s")
        return 1
    busy = window(handle, args.seconds, load)
    load.stop.set()
    load.thread.join()
    show("copies", busy)
    if first is None:
        print("the console samples the driver on this GPU (no counters)")
        return 0
    worst = 0.0
    for way in ("tx", "rx"):
        counter, truth = busy[f"counter_{way}"], busy[f"copies_{way}"]
        if counter is None or not truth:
            print(f"{way}: no rate to compare")
            return 1
        worst = max(worst, abs(counter - truth) / truth)
    print(f"counters vs what the copies moved: worst {worst:.0%} apart")
    return 0 if worst <= 0.25 else 1


if __name__ == "__main__":
    sys.exit(main())
