"""The `servedeck_*` metric families, their HELP texts, and the collector that writes them.

Every series carries `host`, `unit` and `model` labels (names a profile already shows
on screen, never a URL, a key or a command line). A value that is not known yet is
left out of the exposition rather than written as 0, so Prometheus shows it as absent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tui.exporter.engine_series import ENGINE_METRICS, EngineView, engine_families
from tui.serving.load.tracker import Phase
from tui.serving.progress.model import PROGRESS_STATES

BASE_LABELS = ("host", "unit", "model")
UNIT_STATES = ("active", "activating", "deactivating", "inactive", "failed", "reloading")
LOAD_PHASES = tuple(str(phase) for phase in Phase)

# name -> HELP: the documented names (README lists them; tests check each is exposed).
METRICS: dict[str, str] = {
    "servedeck_exporter_info": "servedeck exporter build and target; always 1.",
    "servedeck_unit_state": "1 for the systemd ActiveState the service unit is in, 0 otherwise.",
    "servedeck_unit_restarts": "Times systemd restarted the unit (NRestarts).",
    "servedeck_load_phase": "1 for the load phase the service log shows, 0 for the others.",
    "servedeck_load_shards_done": "Checkpoint shards loaded so far in the current load.",
    "servedeck_load_shards_total": "Checkpoint shards the current load reads.",
    "servedeck_load_eta_seconds": "Estimated seconds until the load finishes its weights.",
    "servedeck_engine_progress": "1 for the engine's progress verdict now (idle, serving, "
    "slow, stalled, unknown), 0 for the others.",
    "servedeck_ready": "1 while the server answers /health and lists a model, else 0.",
    "servedeck_leftover_processes": "GPU processes left behind by a stopped service.",
    "servedeck_leftover_gpu_memory_bytes": "GPU memory held by leftover processes, in bytes.",
    "servedeck_alerts_firing": "Alerts of the profile's rules firing now.",
    "servedeck_alert_firing": "1 for each alert firing now (alert, severity labels).",
    "servedeck_bench_output_tokens_per_second": (
        "Best output tok/s of the best complete run of that preset on this configuration."
    ),
    "servedeck_bench_single_stream_tokens_per_second": (
        "Output tok/s at concurrency 1 in the best complete run of that preset."
    ),
    "servedeck_bench_timestamp_seconds": (
        "When the best complete run of that preset started (Unix time)."
    ),
    "servedeck_source_up": "1 when servedeck could read that source on its last try, else 0.",
    **ENGINE_METRICS,
}


@dataclass(frozen=True, slots=True)
class BenchSeries:
    """The best complete run of one preset (tui.bench.best); None: not measured by it."""

    preset: str
    output_tok_s: float | None
    single_stream_tok_s: float | None
    started_s: float | None


@dataclass(frozen=True, slots=True)
class ExporterView:
    """What the exporter knows right now (None: not known, left out of the exposition)."""

    host: str
    unit: str
    model: str
    version: str
    unit_state: str | None = None
    unit_restarts: int | None = None
    phase: str | None = None
    shards_done: int | None = None
    shards_total: int | None = None
    eta_s: float | None = None
    ready: bool | None = None
    leftovers: int | None = None
    leftover_bytes: int | None = None
    alerts: tuple[tuple[str, str], ...] = ()  # (alert id, severity) of firing alerts
    bench: tuple[BenchSeries, ...] = ()  # one per preset: its best complete run
    sources_up: tuple[tuple[str, bool], ...] = ()
    progress: str | None = None  # tui.serving.progress.model.PROGRESS_STATES
    engine: EngineView = field(
        default_factory=EngineView
    )  # DP engines, spec decode, sleep, adapters, P/D


class ServedeckCollector(Collector):
    """Writes one ExporterView per scrape; the view comes from the runner's last poll."""

    def __init__(self, view: Callable[[], ExporterView]) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        v = self._view()
        base = [v.host, v.unit, v.model]

        def gauge(name: str, extra: tuple[str, ...] = ()) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, METRICS[name], labels=[*BASE_LABELS, *extra])

        def single(name: str, value: float | None) -> Iterator[Metric]:
            if value is not None:
                family = gauge(name)
                family.add_metric(base, float(value))
                yield family

        info = gauge("servedeck_exporter_info", ("version",))
        info.add_metric([*base, v.version], 1.0)
        yield info
        if v.unit_state is not None:
            states = gauge("servedeck_unit_state", ("state",))
            known = UNIT_STATES if v.unit_state in UNIT_STATES else (*UNIT_STATES, v.unit_state)
            for state in known:
                states.add_metric([*base, state], 1.0 if state == v.unit_state else 0.0)
            yield states
        yield from single("servedeck_unit_restarts", v.unit_restarts)
        if v.phase is not None:
            phases = gauge("servedeck_load_phase", ("phase",))
            for phase in LOAD_PHASES:
                phases.add_metric([*base, phase], 1.0 if phase == v.phase else 0.0)
            yield phases
        yield from single("servedeck_load_shards_done", v.shards_done)
        yield from single("servedeck_load_shards_total", v.shards_total)
        yield from single("servedeck_load_eta_seconds", v.eta_s)
        yield from single("servedeck_ready", None if v.ready is None else float(v.ready))
        if v.progress is not None:
            progress = gauge("servedeck_engine_progress", ("state",))
            for state in PROGRESS_STATES:
                progress.add_metric([*base, state], 1.0 if state == v.progress else 0.0)
            yield progress
        yield from engine_families(v.engine, base, gauge)
        yield from single("servedeck_leftover_processes", v.leftovers)
        yield from single("servedeck_leftover_gpu_memory_bytes", v.leftover_bytes)
        yield from single("servedeck_alerts_firing", len(v.alerts))
        firing = gauge("servedeck_alert_firing", ("alert", "severity"))
        for alert, severity in v.alerts:
            firing.add_metric([*base, alert, severity], 1.0)
        yield firing
        for name, field_name in (
            ("servedeck_bench_output_tokens_per_second", "output_tok_s"),
            ("servedeck_bench_single_stream_tokens_per_second", "single_stream_tok_s"),
            ("servedeck_bench_timestamp_seconds", "started_s"),
        ):
            values = [(s.preset, getattr(s, field_name)) for s in v.bench]
            if any(value is not None for _, value in values):
                family = gauge(name, ("preset",))
                for preset, value in values:
                    if value is not None:
                        family.add_metric([*base, preset], float(value))
                yield family
        if v.sources_up:
            up = gauge("servedeck_source_up", ("source",))
            for source, ok in v.sources_up:
                up.add_metric([*base, source], 1.0 if ok else 0.0)
            yield up
