"""Runs the Deck's sources (the recorder's loops, without a recording) behind a /metrics port.

The headless recorder already polls the unit, follows the log, probes readiness,
lists GPU processes and feeds the alert rules; the exporter reuses it with a sink that
keeps nothing, and after each poll turns what it saw into an ExporterView that the
HTTP thread serves. Nothing is read at scrape time, so a slow host never stalls a scrape.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import replace
from datetime import datetime
from http.server import ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import MetricsHandler

from tui import __version__
from tui.alerts.monitor import AlertMonitor
from tui.bench.best import best_benchmarks
from tui.bench.context import config_hash
from tui.bench.history import history_path, runs_for_host
from tui.deck import Deck
from tui.exporter.engine_series import EngineView
from tui.exporter.metrics import BenchSeries, ExporterView, ServedeckCollector
from tui.gpu.model import GpuBoxSnapshot
from tui.logs.line import LogLine
from tui.procs.model import ProcListing
from tui.record.feed import RecordFeed
from tui.record.headless import Cadence, HeadlessRecorder
from tui.record.model import Event, MetricsRow
from tui.serving.disagg import role_from_log, role_from_metrics
from tui.serving.metrics import ServerMetrics
from tui.serving.readiness import Readiness
from tui.serving.unit.service import UnitState


class _NoSink:
    """The exporter records nothing: it only needs the feed's bookkeeping."""

    def add_gpu(self, snapshot: GpuBoxSnapshot) -> None:
        pass

    def add_metrics(self, row: MetricsRow) -> None:
        pass

    def add_event(self, event: Event) -> None:
        pass


class _ExporterFeed(RecordFeed):
    """A feed that also keeps the last process listing and whether the host answered,
    the last /metrics figures and readiness, and the P/D role the engine's args line says."""

    listing: ProcListing | None = None
    host_error: str | None = None
    metrics: ServerMetrics | None = None
    readiness: Readiness | None = None
    kv_role: str | None = None

    def observe_metrics(self, metrics: ServerMetrics) -> None:
        super().observe_metrics(metrics)
        self.metrics = metrics

    def observe_readiness(self, readiness: Readiness) -> None:
        super().observe_readiness(readiness)
        if readiness.checked:
            self.readiness = readiness

    def observe_log(self, line: LogLine, now_s: float) -> None:
        super().observe_log(line, now_s)
        if "non-default args:" in line.text:  # a (re)start: its own role, or none
            self.kv_role = role_from_log((line.text,))

    def engine_view(self, serving: bool) -> EngineView:
        """What the last poll said of the engines; nothing while the server is not serving."""
        metrics = self.metrics if serving else None
        if metrics is None or metrics.source != "metrics":
            return EngineView()
        adapters = None
        if self.readiness is not None and (metrics.lora is not None or self.readiness.adapters):
            adapters = len(self.readiness.adapters)
        return EngineView(
            engines=metrics.engines,
            spec=metrics.spec_decode,
            sleep_level=metrics.sleep_level,
            adapters=adapters,
            kv_role=self.kv_role or role_from_metrics(metrics.kv_transfers),
            transfers=metrics.kv_transfers,
        )

    def observe_listing(self, listing: ProcListing) -> None:
        super().observe_listing(listing)
        self.listing = listing

    def observe_unit(self, state: UnitState | None, now_s: float, error: str | None = None) -> None:
        super().observe_unit(state, now_s, error)
        self.host_error = error


def default_host_label(deck: Deck) -> str:
    """The name a fleet shows: this machine's hostname for a local profile."""
    host = deck.profile.host
    if host.kind == "ssh" and host.hostname:
        return host.hostname
    if host.kind == "local":
        return socket.gethostname()
    return deck.host_label


class _BenchCache:
    """Each preset's best complete run of one profile on one configuration of its host
    (tui.bench.best decides), re-read only when the history file changed (every local
    profile is host `local`: the host alone mixed two services')."""

    def __init__(self, host: str, config_hash: str, path: Path, profile: str) -> None:
        self.host = host
        self.config_hash = config_hash
        self.path = path
        self.profile = profile
        self._stamp: tuple[int, int] | None = None
        self.series: tuple[BenchSeries, ...] = ()

    def read(self) -> tuple[BenchSeries, ...]:
        try:
            stat = self.path.stat()
        except OSError:
            return self.series
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            self._stamp = stamp
            runs = [
                run
                for run in runs_for_host(self.host, self.path, limit=2000)
                if run.context.config_hash == self.config_hash
                and run.context.profile == self.profile
            ]
            chosen: dict[str, BenchSeries] = {}
            for figure in best_benchmarks(runs):  # newest first: the newest config wins
                if figure.preset in chosen:
                    continue
                try:
                    started = datetime.fromisoformat(figure.started_at).timestamp()
                except ValueError:
                    started = None
                output = figure.tok_s if figure.kind == "decode" else None
                chosen[figure.preset] = BenchSeries(
                    figure.preset, output, figure.single_stream_tok_s, started
                )
            self.series = tuple(sorted(chosen.values(), key=lambda series: series.preset))
        return self.series


class ExporterRunner:
    """One Deck's sources polled, and the latest ExporterView for the HTTP thread."""

    def __init__(
        self, deck: Deck, host_label: str | None = None, cadence: Cadence | None = None
    ) -> None:
        self.deck = deck
        profile = deck.profile
        self.host = host_label or default_host_label(deck)
        self.unit = deck.unit_label
        self.model = profile.model.name or ""
        secrets = (deck.api_key,) if deck.api_key else ()
        self.feed = _ExporterFeed(_NoSink(), deck.host_label, extra_secrets=secrets)
        # The exporter reports alerts; delivering them stays with the console and recorder.
        alerting = replace(profile.alerting, webhook=None)
        self.monitor = AlertMonitor(alerting, deck.host_label)
        self.severity = {rule.name: rule.severity for rule in alerting.effective_rules()}
        self.recorder = HeadlessRecorder(deck, self.feed, cadence, self.monitor)
        self.recorder.on_tick.append(lambda _recorder: self.refresh())
        self.bench = _BenchCache(
            deck.host_label, config_hash(profile), history_path(), profile.name
        )
        self._view = ExporterView(self.host, self.unit, self.model, __version__)
        self._lock = threading.Lock()
        self.port: int | None = None
        self.bound = threading.Event()  # set once /metrics listens (port known)

    def view(self) -> ExporterView:
        with self._lock:
            return self._view

    def refresh(self) -> None:
        """Build the view from the recorder's state (on the event loop, after a poll)."""
        recorder = self.recorder
        unit = recorder.unit_state
        progress = recorder.tracker.snapshot() if recorder.log_seen else None
        if unit is None and self.feed.host_error is not None:
            progress = None  # nothing read from the host: the phase is unknown, not "stopped"
        listing = self.feed.listing
        leftovers = None
        leftover_bytes = None
        if listing is not None:
            left = [proc for proc in listing.processes if proc.klass == "leftover"]
            leftovers = len(left)
            leftover_bytes = sum(proc.gpu_memory_bytes or 0 for proc in left)
        firing = tuple(
            (alert, self.severity.get(alert.split(":")[0], "warning"))
            for alert in self.monitor.engine.firing()
        )
        # A sleeping engine still answers /metrics: never "ready" (vllm:engine_sleep_state).
        engine = self.feed.engine_view(recorder.ready)
        gpu = recorder.last_gpu
        sources: list[tuple[str, bool]] = []
        if gpu is not None:
            sources.append(("gpu", gpu.available))
        if unit is not None or self.feed.host_error is not None:
            sources.append(("service", self.feed.host_error is None))
        view = ExporterView(
            host=self.host,
            unit=self.unit,
            model=self.model,
            version=__version__,
            unit_state=unit.active_state if unit is not None else None,
            unit_restarts=unit.n_restarts if unit is not None else None,
            phase=progress.phase if progress is not None else None,
            shards_done=progress.shards_done if progress is not None else None,
            shards_total=progress.shards_total if progress is not None else None,
            eta_s=progress.eta_s if progress is not None else None,
            ready=(recorder.ready and not engine.sleep_level)
            if progress is not None or unit is not None
            else None,
            leftovers=leftovers,
            leftover_bytes=leftover_bytes,
            alerts=firing,
            bench=self.bench.read(),
            sources_up=tuple(sources),
            # Before the first verdict (two reads of the engine) the state is unknown, said so.
            progress=recorder.progress.verdict.state if recorder.progress.verdict else "unknown",
            engine=engine,
        )
        with self._lock:
            self._view = view

    def registry(self) -> CollectorRegistry:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ServedeckCollector(self.view))
        return registry

    async def serve(
        self, port: int, address: str = "0.0.0.0", stop: asyncio.Event | None = None
    ) -> None:
        """Serve /metrics on address:port until `stop` is set (or forever)."""
        httpd = ThreadingHTTPServer((address, port), MetricsHandler.factory(self.registry()))
        httpd.daemon_threads = True
        self.port = int(httpd.server_address[1])
        self.bound.set()
        thread = threading.Thread(target=httpd.serve_forever, name="servedeck-exporter")
        thread.daemon = True
        thread.start()
        try:
            await self.recorder.run(stop=stop)
        finally:
            httpd.shutdown()
            httpd.server_close()
            self.monitor.close()
