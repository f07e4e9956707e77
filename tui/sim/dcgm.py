"""A dcgm-exporter-compatible /metrics for the simulated GPUs.

Names, HELP texts, label names and units follow NVIDIA's dcgm-exporter with its
default counters (memory in MiB, power in W, temperature in C, utilization in %,
XID_ERRORS the value of the last XID seen, 0 when none), so a Prometheus fleet
source written against the simulator reads real dcgm-exporter series unchanged.
A lost GPU is left out of the exposition, as dcgm-exporter drops a GPU it cannot read.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import MetricsHandler
from prometheus_client.registry import Collector

from tui.gpu.model import GpuBoxSnapshot
from tui.sim.gpu_model import SimGpuModel
from tui.sim.health import xids_from_env

MIB = 1024**2
DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
# (name, HELP) in dcgm-exporter's default-counters.csv order (energy and PCIe left out).
GAUGES: tuple[tuple[str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "Frame buffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "Frame buffer memory used (in MiB)."),
)


class DcgmCollector(Collector):
    """Reads one snapshot per scrape and writes it as dcgm-exporter's families."""

    def __init__(
        self,
        snapshot: Callable[[], GpuBoxSnapshot],
        hostname: str,
        last_xid: Callable[[int], int] | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._hostname = hostname
        self._last_xid = last_xid or (lambda _gpu: 0)

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot()
        families = {name: GaugeMetricFamily(name, doc, labels=DCGM_LABELS) for name, doc in GAUGES}
        statics = {static.index: static for static in snap.statics}
        for sample in snap.samples if snap.available else ():
            static = statics.get(sample.index)
            if sample.lost or static is None:
                continue
            labels = [
                str(sample.index),
                static.uuid,
                static.bus_id,
                f"nvidia{sample.index}",
                static.name,
                self._hostname,
            ]
            used = sample.memory_used_bytes
            total = sample.memory_total_bytes or static.memory_total_bytes
            values: dict[str, float | None] = {
                "DCGM_FI_DEV_SM_CLOCK": sample.sm_clock_mhz,
                "DCGM_FI_DEV_MEM_CLOCK": sample.memory_clock_mhz,
                "DCGM_FI_DEV_GPU_TEMP": sample.temperature_c,
                "DCGM_FI_DEV_POWER_USAGE": sample.power_w,
                "DCGM_FI_DEV_GPU_UTIL": sample.utilization_gpu_pct,
                "DCGM_FI_DEV_MEM_COPY_UTIL": sample.utilization_memory_pct,
                "DCGM_FI_DEV_XID_ERRORS": float(self._last_xid(sample.index)),
                "DCGM_FI_DEV_FB_USED": None if used is None else used // MIB,
                "DCGM_FI_DEV_FB_FREE": (
                    None if used is None or total is None else max(total - used, 0) // MIB
                ),
            }
            for name, value in values.items():
                if value is not None:  # dcgm-exporter skips a field it could not read
                    families[name].add_metric(labels, float(value))
        yield from families.values()


def dcgm_registry(collector: DcgmCollector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


class DcgmServer:
    """dcgm-exporter's /metrics on a loopback port, served from a thread."""

    def __init__(self, collector: DcgmCollector, port: int = 0, host: str = "127.0.0.1") -> None:
        handler = MetricsHandler.factory(dcgm_registry(collector))
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def start(self) -> DcgmServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def sim_xids() -> Callable[[int], int]:
    """The last XID per GPU the simulator's health model injects (SERVEDECK_SIM_XID)."""
    last = {gpu: xid for xid, gpu in xids_from_env()}
    return lambda gpu: last.get(gpu, 0)


def main(argv: list[str] | None = None) -> int:
    """`python -m tui.sim.dcgm --state-dir D --port P`: a light box's dcgm-exporter alone."""
    parser = argparse.ArgumentParser(prog="python -m tui.sim.dcgm", description=__doc__)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hostname", default=socket.gethostname())
    args = parser.parse_args(argv)
    model = SimGpuModel(Path(args.state_dir), args.seed)
    lock = threading.Lock()

    def snapshot() -> GpuBoxSnapshot:
        with lock:
            return model.snapshot()

    server = DcgmServer(DcgmCollector(snapshot, args.hostname, sim_xids()), args.port)
    print(f"dcgm-exporter (simulated) on {server.url}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
