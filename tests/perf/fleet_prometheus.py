"""Figures for the Prometheus fleet: queries per refresh, refresh time and console CPU by fleet size.

A real Prometheus (/usr/bin/prometheus) scrapes, every SCRAPE_S, N synthetic hosts x 3 jobs
(dcgm-exporter with 8 GPUs, vLLM, servedeck exporter). The hosts' series come from one
synthetic exporter process that answers `?host=NAME` with that host's series (each
Prometheus target sets `__param_host`), so 500 hosts do not need 1500 processes. The
fleet source then refreshes REFRESHES times; its own CPU time (this process) per refresh
is the console's cost.

    .venv/bin/python tests/perf/fleet_prometheus.py [10 100 500]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.support.prometheus_fixtures import PrometheusServer, ScrapeJob  # noqa: E402
from tui.fleet.prom_history import PrometheusHistory  # noqa: E402
from tui.fleet.prom_query import PromFleetConfig, build_query  # noqa: E402
from tui.fleet.prometheus import PrometheusFleet  # noqa: E402
from tui.sim.box import free_port  # noqa: E402

SCRAPE_S = 5.0
REFRESHES = 20
REFRESH_EVERY_S = 2.0  # the Fleet pane's refresh period the CPU share is computed for


def host_series(job: str, host: str) -> bytes:
    """Static series of one host's job (value = a function of the host number: the truth)."""
    n = int(host.removeprefix("host"))
    lines = []
    if job == "dcgm":
        for gpu in range(8):
            labels = f'gpu="{gpu}",UUID="GPU-{n:04d}-{gpu}",device="nvidia{gpu}",modelName="SIM",Hostname="{host}"'
            for name, value in (
                ("DCGM_FI_DEV_FB_USED", 1000 + n),
                ("DCGM_FI_DEV_FB_FREE", 96887 - n),
                ("DCGM_FI_DEV_GPU_UTIL", n % 100),
                ("DCGM_FI_DEV_GPU_TEMP", 40 + gpu),
                ("DCGM_FI_DEV_POWER_USAGE", 100.0 + gpu),
                ("DCGM_FI_DEV_XID_ERRORS", 0),
                ("DCGM_FI_DEV_SM_CLOCK", 1800),
                ("DCGM_FI_DEV_MEM_CLOCK", 9000),
                ("DCGM_FI_DEV_MEM_COPY_UTIL", 3),
            ):
                lines.append(f"{name}{{{labels}}} {value}")
    elif job == "vllm":
        labels = 'engine="0",model_name="m"'
        lines += [
            f"vllm:num_requests_running{{{labels}}} {n % 7}",
            f"vllm:num_requests_waiting{{{labels}}} 0",
            f"vllm:kv_cache_usage_perc{{{labels}}} 0.25",
            f"vllm:generation_tokens_total{{{labels}}} {n * 1000}",
        ]
    else:
        base = f'unit="vllm.service",model="m",host="{host}"'
        lines += [f'servedeck_unit_state{{{base},state="active"}} 1']
        lines += [f'servedeck_load_phase{{{base},phase="serving"}} 1']
        for name, value in (("shards_done", 64), ("shards_total", 64)):
            lines.append(f"servedeck_load_{name}{{{base}}} {value}")
        lines += [f"servedeck_ready{{{base}}} 1", f"servedeck_leftover_processes{{{base}}} 0"]
    return ("\n".join(lines) + "\n").encode()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        body = host_series(query.get("job", ["dcgm"])[0], query.get("host", ["host0"])[0])
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except BrokenPipeError:
            pass  # Prometheus gave up on a slow scrape (a loaded machine); it shows as a failure

    def log_message(self, *_: object) -> None:
        pass


def serve(port: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


async def history_costs(url: str, figures: dict[str, float]) -> None:
    """One host's sparkline history (15 min at 15 s, 3 series, one query_range): wall and CPU."""
    source = PrometheusFleet(PromFleetConfig(url, host_label="host"))
    history = PrometheusHistory(source)
    walls, cpus = [], []
    try:
        for _ in range(REFRESHES):
            cpu, wall = time.process_time(), time.perf_counter()
            got = await history.fetch("host0")
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            assert got.error is None and not got.empty, got
    finally:
        await source.aclose()
    walls.sort()
    figures["history_p50_s"] = round(statistics.median(walls), 4)
    figures["history_p95_s"] = round(walls[round(0.95 * (len(walls) - 1))], 4)
    figures["history_cpu_s"] = round(statistics.mean(cpus), 4)
    figures["history_queries"] = history.fetches / REFRESHES


async def column_costs(url: str, costs: dict[str, float]) -> None:
    """Each column's query alone (median of 3): where Prometheus spends a refresh."""
    full = PromFleetConfig(url, host_label="host")
    for name in full.effective_columns():
        alone = PrometheusFleet(full)
        alone.query = build_query(full, only=name)
        times = []
        try:
            for _ in range(3):
                started = time.perf_counter()
                await alone.refresh()
                times.append(time.perf_counter() - started)
        finally:
            await alone.aclose()
        costs[name] = round(statistics.median(times), 4)


def measure(hosts: int) -> dict[str, object]:
    port = free_port()
    exporter = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    target = f"127.0.0.1:{port}"
    jobs = [
        ScrapeJob(
            job,
            [
                (target, {"host": f"host{n}", "__param_host": f"host{n}", "__param_job": job})
                for n in range(hosts)
            ],
        )
        for job in ("dcgm", "vllm", "servedeck")
    ]
    with tempfile.TemporaryDirectory(prefix="servedeck-fleet-perf-") as tmp:
        prom = PrometheusServer(Path(tmp), jobs, SCRAPE_S)
        try:
            prom.start()
            source = PrometheusFleet(PromFleetConfig(prom.url, host_label="host"))

            async def refresh_all() -> tuple[list[float], list[float], int, int]:
                walls, cpus, rows_seen, complete = [], [], 0, 0
                try:
                    # every host scraped by every job (and twice, for the rate) first
                    deadline = time.monotonic() + 120 + hosts * 0.2
                    while time.monotonic() < deadline:
                        rows = await source.refresh()
                        if len(rows) == hosts and all(
                            r.gpu_count == 8 and r.gen_tok_s is not None for r in rows
                        ):
                            break
                        await asyncio.sleep(1.0)
                    sent_before = source.queries_sent
                    for _ in range(REFRESHES):
                        cpu, wall = time.process_time(), time.perf_counter()
                        rows = await source.refresh()
                        walls.append(time.perf_counter() - wall)
                        cpus.append(time.process_time() - cpu)
                        rows_seen = len(rows)
                        complete = sum(
                            1
                            for r in rows
                            if r.gpu_count == 8
                            and r.gpu_mem_used_bytes == 8 * (1000 + int(r.host[4:])) * 1024**2
                            and r.unit_state == "active"
                        )
                        await asyncio.sleep(0.2)
                    queries = (source.queries_sent - sent_before) / REFRESHES
                    await column_costs(prom.url, costs)
                    await history_costs(prom.url, history)
                    return walls, cpus, rows_seen, complete if queries == 1 else -1
                finally:
                    await source.aclose()

            costs: dict[str, float] = {}
            history: dict[str, float] = {}
            walls, cpus, rows_seen, complete = asyncio.run(refresh_all())
        finally:
            prom.stop()
            exporter.terminate()
            exporter.wait()
    walls.sort()
    p95 = walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))]
    return {
        "hosts": hosts,
        "gpus": hosts * 8,
        "queries_per_refresh": 1 if complete >= 0 else "more than 1",
        "rows": rows_seen,
        "rows_matching_truth": complete,
        "refresh_p50_s": round(statistics.median(walls), 4),
        "refresh_p95_s": round(p95, 4),
        "cpu_per_refresh_s": round(statistics.mean(cpus), 4),
        f"console_cpu_pct_at_{REFRESH_EVERY_S:g}s": round(
            100 * statistics.mean(cpus) / REFRESH_EVERY_S, 2
        ),
        "slowest_columns_s": dict(sorted(costs.items(), key=lambda kv: -kv[1])[:4]),
        **history,
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        serve(int(argv[1]))
        return 0
    sizes = [int(a) for a in argv] or [10, 100]
    for hosts in sizes:
        print(json.dumps(measure(hosts)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
