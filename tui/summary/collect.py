"""Gather a SummaryInputs from a Deck: every collector at once, each under its own timeout.

A collector that raises or runs out of time becomes one line in `problems`
("gpus: timed out after 10 s"), and the rest of the summary still renders.
The load timeline comes from the console's live tracker when it has one,
otherwise from replaying the service log through a LoadTracker.
"""

from __future__ import annotations

import asyncio
import posixpath
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tui.bench.capacity.history import searches_for_host
from tui.bench.context import config_hash
from tui.bench.history import history_path, runs_for_host
from tui.core import paths
from tui.core.audit import read_audit
from tui.core.errors import ServedeckError
from tui.core.redact import redact_text
from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot
from tui.hostfacts.facts import DiskFacts, SoftwareVersions
from tui.ops.hardware_health import collect_hardware_health
from tui.plan import build_plan, inventory_from_snapshot
from tui.plan.for_profile import profile_layout, with_engine_kv
from tui.plan.layout import Layout, PlanSettings
from tui.serving.load.explain_status import history_key
from tui.serving.load.history import earlier_loads
from tui.serving.load.tracker import LoadProgress, LoadTracker
from tui.serving.metrics import MetricsPoller
from tui.summary.incidents import incidents_from_audit
from tui.summary.inputs import ModelSummary, ServiceSummary, SummaryInputs
from tui.summary.recorded import recorded_history


@dataclass(frozen=True, slots=True)
class CollectTimeouts:
    """Seconds each collector may take; generous for SSH, short for HTTP."""

    facts_s: float = 20.0
    gpu_s: float = 10.0
    service_s: float = 10.0
    log_s: float = 20.0
    metrics_s: float = 4.0
    model_s: float = 30.0
    local_files_s: float = 10.0


LOG_LINES = 5000


async def _guarded(
    name: str, make: Callable[[], Awaitable[Any]], timeout_s: float, problems: list[str]
) -> tuple[Any, float]:
    """Run one collector; its failure is a problem line, never an exception."""
    started = time.perf_counter()
    try:
        value = await asyncio.wait_for(make(), timeout_s)
    except TimeoutError:
        problems.append(f"{name}: timed out after {timeout_s:g} s")
        value = None
    except (ServedeckError, OSError, ValueError) as error:
        problems.append(f"{name}: {error}")
        value = None
    return value, time.perf_counter() - started


def summary_secrets(deck: Deck) -> tuple[str, ...]:
    """Known secret values to scrub besides the patterns: the API key from the profile's env var."""
    key = deck.api_key
    return (key,) if key else ()


async def _software(deck: Deck) -> SoftwareVersions:
    return await deck.software_versions()


async def _disk(deck: Deck) -> DiskFacts | None:
    return await deck.disk_facts()


async def _gpu(deck: Deck) -> GpuBoxSnapshot:
    source = await deck.gpu_source()
    return await source.sample()


async def _service(deck: Deck) -> ServiceSummary:
    service = deck.profile.service
    controller = deck.service()
    unit = await controller.state() if controller is not None else None
    cmdline = None
    if unit is not None and unit.main_pid:
        try:
            raw = await deck.host.read_file(f"/proc/{unit.main_pid}/cmdline", max_bytes=65536)
            argv = [part for part in raw.decode(errors="replace").split("\0") if part]
            cmdline = redact_text(shlex.join(argv), summary_secrets(deck)) if argv else None
        except ServedeckError:
            cmdline = None  # the process ended between the two reads
    base_url = deck.base_url
    return ServiceSummary(service.engine, unit, base_url, deck.service_port, cmdline)


async def _load_from_log(deck: Deck) -> tuple[LoadProgress, int] | None:
    source = deck.replay_log_lines(initial_lines=LOG_LINES)
    if source is None:
        return None
    tracker = LoadTracker()
    count = 0
    async for line in source:
        tracker.apply(line)
        count += 1
    return (tracker.snapshot(), count) if count else None


async def _metrics(deck: Deck) -> Any:
    url = await deck.reachable_base_url()
    return await MetricsPoller(url, api_key=deck.api_key, timeout_s=3.0).poll()


async def _model(deck: Deck) -> tuple[ModelSummary, Any]:
    """The model's facts: the checkpoint's headers when it is readable, else its config alone."""
    model = deck.profile.model
    name = model.name or posixpath.basename((model.path or "").rstrip("/")) or "?"
    checkpoint = await deck.checkpoint()
    summary = ModelSummary(
        name,
        model.path,
        checkpoint.facts.arch,
        checkpoint.size_bytes,
        checkpoint.shards,
        checkpoint.source,
    )
    return summary, checkpoint.facts


def last_explained_load(deck: Deck) -> dict[str, Any] | None:
    """The console's explanation of the last load of this model on this host, if any."""
    loads = earlier_loads(
        deck.host_label, history_key(deck.profile.model.name, deck.checkpoint_dir)
    )
    return loads[-1] if loads else None


def _local_history(deck: Deck) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
    # The console and `servedeck bench` record runs under the deck's host label.
    runs = tuple(runs_for_host(deck.host_label, limit=12))
    incidents = incidents_from_audit(read_audit(), deck.host.label)
    searches = tuple(searches_for_host(deck.host_label))
    return runs, incidents, searches


def _files(deck: Deck, service: ServiceSummary | None) -> tuple[tuple[str, str], ...]:
    profile = deck.profile
    found: list[tuple[str, str]] = []
    if profile.path is not None:
        found.append(("profile", str(profile.path)))
    if service is not None and service.unit is not None and service.unit.fragment_path:
        found.append(("unit file", service.unit.fragment_path))
    if profile.model.path:
        found.append(("model directory", profile.model.path))
    python = profile.service.python
    if python:
        venv = posixpath.dirname(posixpath.dirname(python))
        found.append(
            ("serving venv", venv if python.endswith(("/bin/python", "/bin/python3")) else python)
        )
    log = deck.log_label()
    if log is not None:
        found.append(("service log", log))
    found.append(("servedeck data", str(paths.data_dir())))
    found.append(("benchmark history", str(history_path())))
    found.append(("audit log", str(paths.audit_log_path())))
    return tuple(found)


async def _hardware_health(deck: Deck) -> Any:
    return await collect_hardware_health(deck)


async def collect_summary(
    deck: Deck,
    *,
    load: LoadProgress | None = None,
    timeouts: CollectTimeouts | None = None,
) -> SummaryInputs:
    """Everything the summary says, collected concurrently; the deck stays open (caller closes)."""
    t = timeouts or CollectTimeouts()
    problems: list[str] = []
    jobs: dict[str, tuple[Callable[[], Awaitable[Any]], float]] = {
        "host overview": (deck.overview, t.facts_s),
        "software versions": (lambda: _software(deck), t.facts_s),
        "disk": (lambda: _disk(deck), t.facts_s),
        "gpus": (lambda: _gpu(deck), t.gpu_s),
        "service": (lambda: _service(deck), t.service_s),
        "serving metrics": (lambda: _metrics(deck), t.metrics_s),
        "model": (lambda: _model(deck), t.model_s),
        "history": (lambda: asyncio.to_thread(_local_history, deck), t.local_files_s),
        "hardware health": (lambda: _hardware_health(deck), t.facts_s),
    }
    if load is None:
        jobs["load timeline"] = (lambda: _load_from_log(deck), t.log_s)
    names = list(jobs)
    results = await asyncio.gather(
        *(_guarded(name, jobs[name][0], jobs[name][1], problems) for name in names)
    )
    got = {name: value for name, (value, _) in zip(names, results, strict=True)}
    timings = {name: seconds for name, (_, seconds) in zip(names, results, strict=True)}
    problems.sort()  # completion order varies; the summary must not

    load_source = "console (live)" if load is not None else ""
    if load is None and got.get("load timeline"):
        load, count = got["load timeline"]
        load_source = f"service log ({count} lines)"
    model_summary, model_facts = got.get("model") or (None, None)
    gpu: GpuBoxSnapshot | None = got.get("gpus")
    plan = None
    if model_facts is not None and gpu is not None and gpu.available and gpu.statics:
        try:
            settings = PlanSettings(max_model_len=deck.profile.model.max_model_len)
            plan = build_plan(model_facts, inventory_from_snapshot(gpu), settings)
            plan = with_engine_kv(plan, profile_layout(deck.profile), load.facts if load else None)
        except ServedeckError as error:
            problems.append(f"plan: {error}")
    runs, incidents, searches = got.get("history") or ((), (), ())
    m = deck.profile.model
    service: ServiceSummary | None = got.get("service")
    return SummaryInputs(
        profile=deck.profile,
        host_label=deck.host_label,
        generated_at_s=time.time(),
        overview=got.get("host overview"),
        software=got.get("software versions"),
        disk=got.get("disk"),
        gpu=gpu,
        model=model_summary,
        service=service,
        load=load,
        load_source=load_source,
        metrics=got.get("serving metrics"),
        benchmarks=runs,
        bench_config_hash=config_hash(deck.profile),
        capacity_searches=searches,
        incidents=incidents,
        recorded=await asyncio.to_thread(recorded_history, deck.profile, deck.host_label),
        plan=plan,
        chosen_layout=Layout(m.tp, m.pp, m.dp, m.ep) if m.path or m.name else None,
        files=_files(deck, service),
        hardware_health=got.get("hardware health"),
        problems=tuple(problems),
        last_load=last_explained_load(deck),
        timings_s=timings,
    )
