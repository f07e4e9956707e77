"""NvmlGpuSource: this machine's GPUs through NVML (pynvml from nvidia-ml-py).

Every NVML call blocks, so none runs on the event loop: the cheap per-tick
metrics run in `asyncio.to_thread`, and the slow ones (PCIe throughput blocks
~20 ms per call, docs/DESIGN.md section 4) run in a background thread every few
seconds and are merged into the next samples. Per-process utilization is one of
the slow reads (tui/gpu/proc_util.py says what it means). NOT_SUPPORTED becomes None; a
GPU that reports GPU_IS_LOST is marked lost and the others keep updating.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pynvml

from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample, GpuStatic
from tui.gpu.nvml_calls import (
    _MISSING_FUNCTION_CODES,
    _NO_DRIVER_CODES,
    NvmlUnavailable,
    _call,
    _call_quiet,
    _error_code,
    _GpuLost,
    _lost_sample,
    _read_slow,
    _read_sysfs,
    _SlowMetrics,
    _text,
    cuda_version_text,
)
from tui.gpu.nvml_topology import active_nvlinks, read_topology
from tui.gpu.proc_util import ProcessUtilRead, averaged
from tui.gpu.procinfo import LocalProcessCache

SOURCE_NAME = "nvml"


class NvmlGpuSource:
    """The local GPUs through NVML. Open it with `await NvmlGpuSource.open()`."""

    name = SOURCE_NAME

    def __init__(
        self, slow_interval_s: float = 5.0, sysfs_pci_root: Path = Path("/sys/bus/pci/devices")
    ) -> None:
        self._slow_interval_s = slow_interval_s
        self._sysfs_pci_root = sysfs_pci_root
        self._handles: list[Any] = []
        self._statics: tuple[GpuStatic, ...] = ()
        self._topology: tuple[tuple[str, ...], ...] = ()
        self._driver_version: str | None = None
        self._cuda_version: str | None = None
        self._error: str | None = None
        self._initialised = False
        self._lost: set[int] = set()
        self._slow: dict[int, _SlowMetrics] = {}
        # Per-process utilization: each GPU's latest read; GPUs that do not report it.
        self._process_util: dict[int, ProcessUtilRead] = {}
        self._process_util_unsupported: set[int] = set()
        # Each GPU's process count at its last sample: a GPU nobody holds is not asked for
        # per-process utilization (the read costs the slow thread more than all the rest).
        self._holder_counts: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._slow_thread: threading.Thread | None = None
        self._process_functions: dict[str, list[Callable[..., Any]]] = {}
        # Whether the driver answers NVML's v2 memory info (None: not asked yet).
        self._memory_v2: bool | None = None
        self._process_cache = LocalProcessCache()
        # NVML's name for a pid /proc does not show (another pid namespace), asked once while
        # the pid stays on a GPU: the call is a driver round trip per process per tick.
        self._nvml_names: dict[int, str] = {}
        self._sample_lock = asyncio.Lock()

    @classmethod
    async def open(cls, slow_interval_s: float = 5.0) -> NvmlGpuSource:
        """Initialise NVML in a thread; NvmlUnavailable when there is no driver or GPU."""
        source = cls(slow_interval_s=slow_interval_s)
        await asyncio.to_thread(source._open_blocking)
        if source._error is not None:
            raise NvmlUnavailable(source._error)
        return source

    # -- start-up: static facts, read once ---------------------------------------------

    def _open_blocking(self) -> None:
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as error:
            code = _error_code(error)
            self._error = _NO_DRIVER_CODES.get(code, f"NVML failed to start: {error}")
            return
        self._initialised = True
        try:
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except pynvml.NVMLError as error:
            self._error = f"NVML cannot list GPUs: {error}"
            return
        if not self._handles:
            self._error = "no NVIDIA GPU found (driver loaded, 0 devices)"
            return
        self._driver_version = _text(_call_quiet(pynvml.nvmlSystemGetDriverVersion) or "") or None
        self._cuda_version = cuda_version_text(
            _call_quiet(pynvml.nvmlSystemGetCudaDriverVersion_v2)
            or _call_quiet(pynvml.nvmlSystemGetCudaDriverVersion)
        )
        self._statics = tuple(self._read_static(i, h) for i, h in enumerate(self._handles))
        self._topology = read_topology(
            [static.bus_id for static in self._statics], self._handles, self._lost
        )
        # The first read (the driver's whole sample buffer) before the first sample, so a
        # one-shot listing (`servedeck procs`) has the figures too; the slow loop reads on.
        for index, handle in enumerate(self._handles):
            try:
                self._read_process_util_into(index, handle)
            except _GpuLost:
                self._lost.add(index)
        self._slow_thread = threading.Thread(
            target=self._slow_loop, name="servedeck-nvml-slow", daemon=True
        )
        self._slow_thread.start()

    def _read_static(self, index: int, handle: Any) -> GpuStatic:
        try:
            pci = _call(pynvml.nvmlDeviceGetPciInfo, handle)
            bus_id = _text(pci.busId) if pci is not None else ""
            memory = _call(pynvml.nvmlDeviceGetMemoryInfo, handle)
            capability = _call(pynvml.nvmlDeviceGetCudaComputeCapability, handle)
            numa = _call(pynvml.nvmlDeviceGetNumaNodeId, handle)
            if numa is None or numa < 0:
                numa_text = _read_sysfs(bus_id, "numa_node", self._sysfs_pci_root)
                numa = int(numa_text) if numa_text and numa_text.lstrip("-").isdigit() else None
                numa = numa if numa is not None and numa >= 0 else None
            limit_mw = _call(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle)
            return GpuStatic(
                index=index,
                name=_text(_call(pynvml.nvmlDeviceGetName, handle) or "unknown GPU"),
                uuid=_text(_call(pynvml.nvmlDeviceGetUUID, handle) or ""),
                bus_id=bus_id,
                memory_total_bytes=memory.total if memory is not None else None,
                compute_capability=f"{capability[0]}.{capability[1]}" if capability else None,
                numa_node=numa,
                pcie_max_gen=_call(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
                pcie_max_width=_call(pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle),
                power_limit_w=limit_mw / 1000 if limit_mw is not None else None,
                cpu_affinity=_read_sysfs(bus_id, "local_cpulist", self._sysfs_pci_root),
                nvlink_active_links=active_nvlinks(handle)[0] or None,
            )
        except _GpuLost:
            self._lost.add(index)
            return GpuStatic(index=index, name="lost GPU", uuid="", bus_id="",
                             memory_total_bytes=None)  # fmt: skip

    # -- fast metrics, every tick, in a worker thread ----------------------------------

    async def sample(self) -> GpuBoxSnapshot:
        async with self._sample_lock:
            if not self._initialised and self._error is None:
                await asyncio.to_thread(self._open_blocking)
            if self._error is not None:
                return GpuBoxSnapshot(
                    source=self.name, taken_at_s=time.time(), available=False, error=self._error
                )
            return await asyncio.to_thread(self._sample_blocking)

    def _sample_blocking(self) -> GpuBoxSnapshot:
        samples = []
        live_pids: set[int] = set()
        for index, handle in enumerate(self._handles):
            sample = self._sample_gpu(index, handle)
            live_pids.update(proc.pid for proc in sample.processes)
            samples.append(sample)
        self._process_cache.keep_only(live_pids)
        for pid in [pid for pid in self._nvml_names if pid not in live_pids]:
            del self._nvml_names[pid]
        return GpuBoxSnapshot(
            source=self.name,
            taken_at_s=time.time(),
            statics=self._statics,
            samples=tuple(samples),
            driver_version=self._driver_version,
            cuda_version=self._cuda_version,
            topology=self._topology,
        )

    def _sample_gpu(self, index: int, handle: Any) -> GpuSample:
        with self._lock:
            lost = index in self._lost
            slow = self._slow.get(index, _SlowMetrics())
            process_util = self._process_util.get(index)
        if lost:
            return _lost_sample(index)
        try:
            memory = self._memory_info(handle)
            utilization = _call(pynvml.nvmlDeviceGetUtilizationRates, handle)
            temperature = _call(pynvml.nvmlDeviceGetTemperature, handle,
                                pynvml.NVML_TEMPERATURE_GPU)  # fmt: skip
            power_mw = _call(pynvml.nvmlDeviceGetPowerUsage, handle)
            limit_mw = _call(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle)
            sm_clock = _call(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_SM)
            mem_clock = _call(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_MEM)
            pcie_gen = _call(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle)
            pcie_width = _call(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle)
            processes = self._processes(index, handle, process_util)
        except _GpuLost:
            with self._lock:
                self._lost.add(index)
            return _lost_sample(index)
        with self._lock:
            self._holder_counts[index] = len(processes)
        total = memory.total if memory is not None else self._statics[index].memory_total_bytes
        used = memory.used if memory is not None else None
        if used is None:
            # unified-memory GPUs report no framebuffer: what the processes hold is the best hint
            known = [p.used_memory_bytes for p in processes if p.used_memory_bytes is not None]
            used = sum(known) if known else None
        return GpuSample(
            index=index,
            memory_used_bytes=used,
            memory_total_bytes=total,
            memory_reserved_bytes=getattr(memory, "reserved", None),
            utilization_gpu_pct=float(utilization.gpu) if utilization is not None else None,
            utilization_memory_pct=float(utilization.memory) if utilization is not None else None,
            temperature_c=float(temperature) if temperature is not None else None,
            power_w=power_mw / 1000 if power_mw is not None else None,
            power_limit_w=limit_mw / 1000 if limit_mw is not None else None,
            sm_clock_mhz=sm_clock,
            memory_clock_mhz=mem_clock,
            pcie_gen=pcie_gen,
            pcie_width=pcie_width,
            pcie_tx_bytes_per_s=slow.pcie_tx_bytes_per_s,
            pcie_rx_bytes_per_s=slow.pcie_rx_bytes_per_s,
            ecc_uncorrected_errors=slow.ecc_uncorrected_errors,
            throttle_reasons=slow.throttle_reasons,
            processes=processes,
        )

    def _memory_info(self, handle: Any) -> Any:
        """Memory as nvidia-smi states it: NVML's v2 info, whose `used` leaves out what the
        driver reserves for itself (~600 MiB on an idle H200 that v1 counts as used), with
        that reserve apart; v1 where the driver or the bindings lack v2."""
        if self._memory_v2 is not False:
            version = getattr(pynvml, "nvmlMemory_v2", None)
            try:
                if version is None:
                    raise TypeError("bindings without nvmlMemory_v2")
                info = pynvml.nvmlDeviceGetMemoryInfo(handle, version=version)
            except pynvml.NVMLError as error:
                if _error_code(error) == pynvml.NVML_ERROR_GPU_IS_LOST:
                    raise _GpuLost from None
                self._memory_v2 = False
            except (TypeError, AttributeError):
                self._memory_v2 = False
            else:
                self._memory_v2 = True
                return info
        return _call(pynvml.nvmlDeviceGetMemoryInfo, handle)

    def _process_list(self, kind: str, handle: Any) -> list[Any]:
        """Running processes, trying the v3, v2 and plain calls; remembers what works."""
        if kind not in self._process_functions:
            prefix = f"nvmlDevice{'GetComputeRunningProcesses' if kind == 'compute' else 'GetGraphicsRunningProcesses'}"
            names = (f"{prefix}_v3", f"{prefix}_v2", prefix)
            self._process_functions[kind] = [
                getattr(pynvml, name) for name in names if hasattr(pynvml, name)
            ]
        functions = self._process_functions[kind]
        while functions:
            try:
                return list(functions[0](handle))
            except pynvml.NVMLError as error:
                code = _error_code(error)
                if code == pynvml.NVML_ERROR_GPU_IS_LOST:
                    raise _GpuLost from None
                if code not in _MISSING_FUNCTION_CODES or len(functions) == 1:
                    return []
                functions.pop(0)  # this driver lacks that version: use the next one from now on
        return []

    def _processes(
        self, index: int, handle: Any, process_util: ProcessUtilRead | None
    ) -> tuple[GpuProcessUsage, ...]:
        merged: dict[int, tuple[str, int | None]] = {}
        for kind in ("compute", "graphics"):
            for info in self._process_list(kind, handle):
                pid = int(info.pid)
                memory = getattr(info, "usedGpuMemory", None)
                if pid in merged:
                    old_kind, old_memory = merged[pid]
                    memory = max(m for m in (memory, old_memory, 0) if m is not None)
                    merged[pid] = (f"{old_kind}+{kind}", memory)
                else:
                    merged[pid] = (kind, memory)
        usages = []
        for pid, (kind, memory) in sorted(merged.items()):
            details = self._process_cache.get(pid)
            name = details.command if details else self._nvml_name(pid)
            started_at_s = details.started_at_s if details else None
            sm, memory_util = (
                process_util.figures(pid, started_at_s) if process_util else (None, None)
            )
            usages.append(
                GpuProcessUsage(
                    pid=pid,
                    gpu_index=index,
                    used_memory_bytes=memory,
                    process_name=name,
                    kind=kind,
                    user=details.user if details else None,
                    started_at_s=started_at_s,
                    sm_util_percent=sm,
                    memory_util_percent=memory_util,
                )
            )
        return tuple(usages)

    def _nvml_name(self, pid: int) -> str:
        """The driver's name for a pid; an empty answer is asked again on the next tick."""
        name = self._nvml_names.get(pid)
        if name is None:
            name = _text(_call_quiet(pynvml.nvmlSystemGetProcessName, pid) or "")
            if name:
                self._nvml_names[pid] = name
        return name

    # -- slow metrics, in the background thread ----------------------------------------

    def _slow_loop(self) -> None:
        # The open read covers the first interval: a read right after it would see a window
        # too short for a sample and state 0 % for every process.
        util_due = False
        while not self._stop.is_set():
            for index, handle in enumerate(self._handles):
                if self._stop.is_set():
                    return
                with self._lock:
                    if index in self._lost:
                        continue
                try:
                    with self._lock:
                        kept = self._slow.get(index)
                    metrics = _read_slow(handle, kept.pcie_counters if kept else None)
                    with self._lock:
                        held = self._holder_counts.get(index, 1) > 0  # unsampled: read
                    if util_due and held:
                        self._read_process_util_into(index, handle)
                except _GpuLost:
                    with self._lock:
                        self._lost.add(index)
                    continue
                with self._lock:
                    self._slow[index] = metrics
            util_due = True
            self._stop.wait(self._slow_interval_s)

    def _read_process_util_into(self, index: int, handle: Any) -> None:
        """Read one GPU's per-process utilization since its last read (slow thread or open)."""
        if index in self._process_util_unsupported or index in self._lost:
            return
        previous = self._process_util.get(index)
        last_seen_us = previous.last_seen_us if previous else 0
        try:
            samples = pynvml.nvmlDeviceGetProcessUtilization(handle, last_seen_us)
        except pynvml.NVMLError as error:
            code = _error_code(error)
            if code == pynvml.NVML_ERROR_GPU_IS_LOST:
                raise _GpuLost from None
            if code in _MISSING_FUNCTION_CODES:
                with self._lock:
                    self._process_util_unsupported.add(index)
                    self._process_util.pop(index, None)
                return
            if code not in (pynvml.NVML_ERROR_NOT_FOUND, pynvml.NVML_SUCCESS):
                with self._lock:  # a failed read says nothing: unknown until the next one
                    self._process_util.pop(index, None)
                return
            samples = []  # NOT_FOUND (pynvml: SUCCESS with none): no process did any work
        read = averaged(samples, time.time(), last_seen_us)
        with self._lock:
            self._process_util[index] = read

    async def aclose(self) -> None:
        self._stop.set()
        thread, self._slow_thread = self._slow_thread, None
        if thread is not None:
            await asyncio.to_thread(thread.join, 5.0)
        if self._initialised:
            self._initialised = False
            with contextlib.suppress(pynvml.NVMLError):
                await asyncio.to_thread(pynvml.nvmlShutdown)
