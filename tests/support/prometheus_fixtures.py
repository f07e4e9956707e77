"""A real Prometheus server (Debian package `prometheus`) on a loopback port, and boxes for it.

The server runs from /usr/bin/prometheus with a generated config, its TSDB in tmp and a
1 s scrape interval (the Debian service is never touched). A `FleetBox` is one simulated
box as Prometheus sees it: the simulator's vLLM /metrics, a dcgm-exporter-compatible
/metrics of its GPUs and a `servedeck exporter` (the real ExporterRunner on the box's Deck).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx
import pytest

from tui.core.config import Profile, demo_profile
from tui.exporter.runner import ExporterRunner
from tui.hosts.local import LocalHost
from tui.record.headless import Cadence
from tui.sim.box import SimBox, free_port
from tui.sim.dcgm import DcgmCollector, DcgmServer
from tui.sim.deck import SimDeck

PROMETHEUS = "/usr/bin/prometheus"
FAST_CADENCE = Cadence(
    gpu_s=0.5, service_s=0.5, metrics_s=1.0, readiness_s=0.5, procs_s=1.0, files_s=1.0
)


def wait_for(check: Callable[[], object], timeout_s: float, what: str) -> object:
    """Poll `check` until it returns something truthy (the machine is shared: be generous)."""
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as error:
            last_error = error
        else:
            if value:
                return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}: {last_error!r}")


@dataclass
class ScrapeJob:
    name: str
    targets: list[tuple[str, dict[str, str]]]  # (host:port, target labels)


class PrometheusServer:
    """/usr/bin/prometheus on 127.0.0.1 with its own config and TSDB under a tmp dir."""

    def __init__(
        self,
        workdir: Path,
        jobs: list[ScrapeJob],
        scrape_s: float = 1.0,
        basic_auth: tuple[str, str, str] | None = None,
        rule_files: tuple[Path, ...] = (),
    ) -> None:
        self.basic_auth = basic_auth  # (user, password, bcrypt hash of the password)
        self.rule_files = rule_files  # evaluated every scrape_s
        self.workdir = workdir
        self.jobs = jobs
        self.scrape_s = scrape_s
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self) -> Path:
        interval = f"{self.scrape_s:g}s"
        lines = ["global:", f"  scrape_interval: {interval}", f"  evaluation_interval: {interval}"]
        if self.rule_files:
            lines.append("rule_files:")
            lines += [f"  - {json.dumps(str(path))}" for path in self.rule_files]
        lines.append("scrape_configs:")
        for job in self.jobs:
            lines += [f"  - job_name: {json.dumps(job.name)}", f"    scrape_timeout: {interval}"]
            lines.append("    static_configs:")
            for target, labels in job.targets:
                lines.append(f"      - targets: [{json.dumps(target)}]")
                if labels:
                    lines.append(f"        labels: {json.dumps(labels)}")
        path = self.workdir / "prometheus.yml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def start(self) -> PrometheusServer:
        config = self.write_config()
        argv = [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.workdir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--web.enable-lifecycle",
            "--log.level=warn",
        ]
        if self.basic_auth is not None:
            user, _password, hashed = self.basic_auth
            web = self.workdir / "web.yml"
            web.write_text(f"basic_auth_users:\n  {user}: {json.dumps(hashed)}\n")
            argv.append(f"--web.config.file={web}")
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        wait_for(self.ready, 60, f"prometheus ready ({self.log_path})")
        return self

    def ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {self.log_path.read_text()[-2000:]}")
        auth = self.basic_auth[:2] if self.basic_auth else None
        return httpx.get(f"{self.url}/-/ready", timeout=2, auth=auth).status_code == 200

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def query(self, promql: str) -> list[dict[str, object]]:
        body = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=5).json()
        return body["data"]["result"]


@pytest.fixture
def prometheus_factory(tmp_path: Path) -> Iterator[Callable[..., PrometheusServer]]:
    if not Path(PROMETHEUS).exists():
        pytest.skip("needs the Debian package prometheus (.ci/run installs it)")
    servers: list[PrometheusServer] = []

    def make(
        jobs: list[ScrapeJob],
        scrape_s: float = 1.0,
        basic_auth: tuple[str, str, str] | None = None,
    ) -> PrometheusServer:
        workdir = tmp_path / f"prometheus{len(servers)}"
        workdir.mkdir()
        server = PrometheusServer(workdir, jobs, scrape_s, basic_auth)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.stop()


class ExporterThread:
    """A `servedeck exporter` (ExporterRunner) for one SimBox, on its own event loop."""

    def __init__(self, box: SimBox, host_label: str, profile: Profile | None = None) -> None:
        profile = profile or demo_profile()
        profile = replace(profile, service=replace(profile.service, base_url=box.base_url))
        self.deck = SimDeck(profile, LocalHost(label="simulator"), box)
        self.runner = ExporterRunner(self.deck, host_label, FAST_CADENCE)
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> None:
            self._stop = asyncio.Event()
            try:
                await self.runner.serve(0, "127.0.0.1", self._stop)
            finally:
                source = self.deck._gpu_source
                if source is not None:
                    await source.aclose()

        self._loop.run_until_complete(main())

    def start(self) -> ExporterThread:
        self._thread.start()
        wait_for(self.runner.bound.is_set, 30, "exporter bound")
        return self

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.runner.port}"

    def close(self) -> None:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(20)


@dataclass
class FleetBox:
    """One simulated box with its three exporters, scraped as `host=<name>`."""

    name: str
    box: SimBox
    dcgm: DcgmServer
    exporter: ExporterThread
    closed: list[str] = field(default_factory=list)

    def jobs(self) -> dict[str, tuple[str, dict[str, str]]]:
        labels = {"host": self.name}
        return {
            "dcgm": (f"127.0.0.1:{self.dcgm.port}", labels),
            "vllm": (f"127.0.0.1:{self.box.port}", labels),
            "servedeck": (self.exporter.target, labels),
        }

    def kill_exporters(self) -> None:
        """The box's exporters die (its scrape fails); the vLLM service keeps running."""
        self.dcgm.close()
        self.exporter.close()
        self.closed.append("exporters")

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(Exception):
                self.dcgm.close()
            self.exporter.close()
        self.box.close()


def start_fleet_box(name: str, box: SimBox) -> FleetBox:
    """Start the box's service and its exporters (the service loads in the background)."""
    box.start()
    dcgm = DcgmServer(DcgmCollector(box.snapshot, name)).start()
    exporter = ExporterThread(box, name).start()
    return FleetBox(name, box, dcgm, exporter)


def scrape_jobs(
    boxes: list[FleetBox], extra: dict[str, list[str]] | None = None
) -> list[ScrapeJob]:
    jobs: dict[str, ScrapeJob] = {}
    for fleet_box in boxes:
        for job, target in fleet_box.jobs().items():
            jobs.setdefault(job, ScrapeJob(job, [])).targets.append(target)
    for job, targets in (extra or {}).items():
        jobs.setdefault(job, ScrapeJob(job, [])).targets.extend((t, {}) for t in targets)
    return list(jobs.values())
