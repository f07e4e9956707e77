"""A stand-in for the NVML driver library, for machines with no NVIDIA GPU.

No real driver can run on CI or on development machines without a GPU, so the
NVML source is exercised by replacing the `pynvml` module's functions with these
(their names and return shapes follow nvidia-ml-py). The real library is checked
on a real GPU machine by tests/perf/h200_verify.py.

Optional per-call latencies (seconds, spent in time.sleep, which like a real
ctypes call releases the GIL) let tests/perf/gpu_tick.py model a real driver.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

GIB = 1024**3

# Per-call latencies in seconds modelled on an H200 box: most calls are a quick
# ioctl; nvmlDeviceGetPcieThroughput samples a counter for ~20 ms (docs/DESIGN.md section 4).
REALISTIC_LATENCY_S: dict[str, float] = {
    "nvmlDeviceGetPcieThroughput": 0.020,
    "nvmlDeviceGetComputeRunningProcesses_v3": 0.00005,
    "nvmlDeviceGetGraphicsRunningProcesses_v3": 0.00003,
    "nvmlDeviceGetMemoryInfo": 0.00001,
    "nvmlDeviceGetUtilizationRates": 0.00001,
    "nvmlDeviceGetTemperature": 0.00001,
    "nvmlDeviceGetPowerUsage": 0.00002,
    "nvmlDeviceGetTotalEccErrors": 0.0001,
    # Two calls (the count, then the samples); not measured on a real driver: an estimate.
    "nvmlDeviceGetProcessUtilization": 0.0002,
}


@dataclass
class FakeGpu:
    """One simulated GPU; `values` override defaults by NVML function name."""

    index: int
    name: str = "NVIDIA H200"
    memory_total_bytes: int = 143771 * 1024**2
    memory_used_bytes: int = 0
    # What the driver keeps for itself: v1 counts it as used, v2 states it apart.
    memory_reserved_bytes: int = 0
    numa_node: int = 0
    processes: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, bytes)
    graphics_processes: list[tuple[int, int | None]] = field(default_factory=list)
    # NVML's per-process samples: (timestamp in microseconds, pid, smUtil, memUtil); only
    # processes that did work have any. Add "nvmlDeviceGetProcessUtilization" to
    # `unsupported` for a GPU that does not report it.
    process_samples: list[tuple[int, int, int, int]] = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)
    lost: bool = False
    nvlinks: int = 0  # links to an NVSwitch
    # The driver's cumulative PCIe byte counters (NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES);
    # None: this GPU keeps none (the field answers NOT_SUPPORTED).
    pcie_tx_total_bytes: int | None = None
    pcie_rx_total_bytes: int | None = None

    @property
    def bus_id(self) -> str:
        return f"00000000:{0x18 + 0x10 * self.index:02X}:00.0"


def _error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)


class FakeNvml:
    """Installs fake NVML functions; change `gpus` between ticks to change what they report."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        init_error: int | None = None,
        missing: set[str] | None = None,
        latency_s: dict[str, float] | None = None,
        driver_version: str = "570.124.06",
        cuda_version: int = 12080,
    ) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.missing = set(missing or ())
        self.latency_s = dict(latency_s or {})
        self.driver_version = driver_version
        self.cuda_version = cuda_version
        self.calls: dict[str, int] = {}
        self.initialised = False

    # -- plumbing -----------------------------------------------------------------

    def _wrap(self, name: str, body: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            delay = self.latency_s.get(name)
            if delay:
                time.sleep(delay)
            if name in self.missing:
                raise _error(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
            if args and isinstance(args[0], FakeGpu):
                gpu = args[0]
                if gpu.lost:
                    raise _error(pynvml.NVML_ERROR_GPU_IS_LOST)
                if name in gpu.unsupported:
                    raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
            return body(*args, **kwargs)

        return call

    def functions(self) -> dict[str, Callable[..., Any]]:
        bodies: dict[str, Callable[..., Any]] = {
            "nvmlInit": self._init,
            "nvmlShutdown": self._shutdown,
            "nvmlDeviceGetCount": lambda: len(self.gpus),
            "nvmlDeviceGetHandleByIndex": lambda i: self.gpus[i],
            "nvmlSystemGetDriverVersion": lambda: self.driver_version,
            "nvmlSystemGetCudaDriverVersion_v2": lambda: self.cuda_version,
            "nvmlSystemGetCudaDriverVersion": lambda: self.cuda_version,
            "nvmlSystemGetProcessName": lambda pid: f"python{pid}",
            "nvmlDeviceGetName": lambda g: g.name,
            "nvmlDeviceGetUUID": lambda g: f"GPU-{g.index:08x}-0000-0000-0000-000000000000",
            "nvmlDeviceGetPciInfo": lambda g: SimpleNamespace(busId=g.bus_id.encode()),
            "nvmlDeviceGetMemoryInfo": self._memory_info,
            "nvmlDeviceGetCudaComputeCapability": lambda g: (9, 0),
            "nvmlDeviceGetNumaNodeId": lambda g: g.numa_node,
            "nvmlDeviceGetEnforcedPowerLimit": lambda g: 700_000,
            "nvmlDeviceGetMaxPcieLinkGeneration": lambda g: 5,
            "nvmlDeviceGetMaxPcieLinkWidth": lambda g: 16,
            "nvmlDeviceGetCurrPcieLinkGeneration": lambda g: 5,
            "nvmlDeviceGetCurrPcieLinkWidth": lambda g: 16,
            "nvmlDeviceGetUtilizationRates": lambda g: SimpleNamespace(
                gpu=50 if g.memory_used_bytes else 0, memory=20 if g.memory_used_bytes else 0
            ),
            "nvmlDeviceGetTemperature": lambda g, sensor: 40 + g.index,
            "nvmlDeviceGetPowerUsage": lambda g: 120_500 + 1000 * g.index,
            "nvmlDeviceGetClockInfo": lambda g, clock: (
                1980 if clock == pynvml.NVML_CLOCK_SM else 2619
            ),
            "nvmlDeviceGetNvLinkState": self._nvlink_state,
            "nvmlDeviceGetNvLinkRemotePciInfo": lambda g, link: SimpleNamespace(
                busId=b"00000000:A0:00.0"  # an NVSwitch, not a GPU
            ),
            "nvmlDeviceGetTopologyCommonAncestor": lambda a, b: (
                pynvml.NVML_TOPOLOGY_NODE
                if a.numa_node == b.numa_node
                else pynvml.NVML_TOPOLOGY_SYSTEM
            ),
            "nvmlDeviceGetPcieThroughput": lambda g, counter: 1000 + counter,  # KB/s
            "nvmlDeviceGetTotalEccErrors": lambda g, kind, counter: 0,
            "nvmlDeviceGetCurrentClocksEventReasons": lambda g: 0x4,  # sw power cap
            "nvmlDeviceGetCurrentClocksThrottleReasons": lambda g: 0x4,
            "nvmlDeviceGetProcessUtilization": self._process_utilization,
            "nvmlDeviceGetFieldValues": self._field_values,
        }
        for version in ("_v3", "_v2", ""):
            bodies[f"nvmlDeviceGetComputeRunningProcesses{version}"] = self._compute
            bodies[f"nvmlDeviceGetGraphicsRunningProcesses{version}"] = self._graphics
        return {name: self._wrap(name, body) for name, body in bodies.items()}

    def install(self, setter: Callable[[Any, str, Any], None] = setattr) -> None:
        """Replace pynvml's functions (pass monkeypatch.setattr in tests)."""
        for name, function in self.functions().items():
            setter(pynvml, name, function)

    # -- behaviour ----------------------------------------------------------------

    def _init(self) -> None:
        if self.init_error is not None:
            raise _error(self.init_error)
        self.initialised = True

    def _shutdown(self) -> None:
        self.initialised = False

    @staticmethod
    def _field_values(gpu: FakeGpu, field_ids: list[int]) -> list[SimpleNamespace]:
        """Only the PCIe byte counters are modelled; any other field is NOT_SUPPORTED."""
        counters = {
            pynvml.NVML_FI_DEV_PCIE_COUNT_TX_BYTES: gpu.pcie_tx_total_bytes,
            pynvml.NVML_FI_DEV_PCIE_COUNT_RX_BYTES: gpu.pcie_rx_total_bytes,
        }
        values = []
        for field_id in field_ids:
            count = counters.get(field_id)
            values.append(
                SimpleNamespace(
                    fieldId=field_id,
                    nvmlReturn=(
                        pynvml.NVML_SUCCESS
                        if count is not None
                        else pynvml.NVML_ERROR_NOT_SUPPORTED
                    ),
                    valueType=pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
                    value=SimpleNamespace(ullVal=count or 0),
                )
            )
        return values

    def _memory_info(self, gpu: FakeGpu, version: int | None = None) -> SimpleNamespace:
        """v1 (used includes the driver's reserve) or, asked with a version, v2 (apart)."""
        free = gpu.memory_total_bytes - gpu.memory_used_bytes - gpu.memory_reserved_bytes
        if version is None:
            used = gpu.memory_used_bytes + gpu.memory_reserved_bytes
            return SimpleNamespace(total=gpu.memory_total_bytes, used=used, free=free)
        if "nvmlDeviceGetMemoryInfo_v2" in self.missing:
            raise _error(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
        return SimpleNamespace(
            version=version,
            total=gpu.memory_total_bytes,
            reserved=gpu.memory_reserved_bytes,
            used=gpu.memory_used_bytes,
            free=free,
        )

    def _nvlink_state(self, gpu: FakeGpu, link: int) -> int:
        if gpu.nvlinks == 0:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if link >= gpu.nvlinks:
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 1

    @staticmethod
    def _process_objects(entries: list[tuple[int, int | None]]) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in entries]

    def _process_utilization(self, gpu: FakeGpu, last_seen_us: int) -> list[SimpleNamespace]:
        """The samples newer than last_seen_us; NOT_FOUND when there are none, as NVML does."""
        newer = [
            SimpleNamespace(pid=pid, timeStamp=at_us, smUtil=sm, memUtil=mem, encUtil=0, decUtil=0)
            for at_us, pid, sm, mem in gpu.process_samples
            if at_us > last_seen_us
        ]
        if not newer:
            raise _error(pynvml.NVML_ERROR_NOT_FOUND)
        return newer

    def _compute(self, gpu: FakeGpu) -> list[SimpleNamespace]:
        return self._process_objects(gpu.processes)

    def _graphics(self, gpu: FakeGpu) -> list[SimpleNamespace]:
        return self._process_objects(gpu.graphics_processes)


def h200_box(count: int = 8, loaded: bool = True) -> list[FakeGpu]:
    """An HGX H200 box: count GPUs, half on each NUMA node, NVSwitch with 18 links each."""
    gpus = []
    for index in range(count):
        used = (60 + index) * GIB if loaded else 0
        gpus.append(
            FakeGpu(
                index=index,
                memory_used_bytes=used,
                numa_node=0 if index < count // 2 else 1,
                processes=[(4000 + index, used)] if loaded else [],
                process_samples=(
                    [(at_us, 4000 + index, 90, 40) for at_us in (1_000, 2_000, 3_000)]
                    if loaded
                    else []
                ),
                nvlinks=18,
            )
        )
    return gpus
