"""Turns the sources' snapshots into recorder rows and timeline events.

The sources report the present; the feed remembers the previous report and
records what changed (a unit state, a load phase, readiness, a leftover process
appearing or going), so the console and `servedeck record` record alike.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, Protocol

from tui.core.formatting import gib
from tui.core.redact import redact_data, redact_lines, redact_text
from tui.gpu.model import GpuBoxSnapshot
from tui.logs.line import LogLine, warning_or_worse
from tui.procs.model import ProcListing
from tui.record.file_events import audit_event, bench_event, capacity_event, digest
from tui.record.model import Event, MetricsRow
from tui.serving.load.tracker import LoadProgress, vllm_line_time_s
from tui.serving.metrics import ServerMetrics
from tui.serving.readiness import Readiness
from tui.serving.unit.service import UnitState

if TYPE_CHECKING:
    from tui.health.xid.decode import XidEvent
    from tui.serving.load.live import LiveLoad

MAX_TEXT = 500


class Sink(Protocol):
    def add_gpu(self, snapshot: GpuBoxSnapshot) -> None: ...

    def add_metrics(self, row: MetricsRow) -> None: ...

    def add_event(self, event: Event) -> None: ...


def _unit_text(state: UnitState) -> str:
    pid = f", pid {state.main_pid}" if state.main_pid else ""
    result = f", result {state.result}" if state.result not in ("", "success") else ""
    restarts = f", restarts {state.n_restarts}" if state.n_restarts else ""
    return f"{state.unit}: {state.active_state} ({state.sub_state}){pid}{result}{restarts}"


def metrics_row(metrics: ServerMetrics) -> MetricsRow:
    spec = metrics.spec_decode
    return MetricsRow(
        ts_s=metrics.at_s,
        running_reqs=metrics.running_reqs,
        waiting_reqs=metrics.waiting_reqs,
        kv_cache_usage_pct=metrics.kv_cache_usage_pct,
        prompt_tokens_per_s=metrics.prompt_tokens_per_s,
        generation_tokens_per_s=metrics.generation_tokens_per_s,
        preemptions_total=metrics.preemptions_total,
        ttft_p50_s=metrics.ttft_p50_s,
        ttft_p90_s=metrics.ttft_p90_s,
        ttft_p99_s=metrics.ttft_p99_s,
        itl_p50_s=metrics.itl_p50_s,
        itl_p90_s=metrics.itl_p90_s,
        itl_p99_s=metrics.itl_p99_s,
        spec_acceptance_rate=spec.acceptance_rate if spec is not None else None,
        spec_mean_accepted_length=spec.mean_accepted_length if spec is not None else None,
    )


class RecordFeed:
    """One per recorded host; every `observe_*` is cheap and safe on the event loop."""

    def __init__(
        self,
        sink: Sink,
        host_label: str,
        *,
        extra_secrets: tuple[str, ...] = (),
        listeners: tuple[Callable[[Event], None], ...] = (),
    ) -> None:
        self.sink = sink
        self.host_label = host_label
        self.extra_secrets = extra_secrets
        self.listeners = list(listeners)
        self._gpu_error: str | None = None
        self._gpu_lost: dict[int, bool] = {}
        self._throttle: dict[int, tuple[str, ...]] = {}
        self._unit_key: tuple[object, ...] | None = None
        self._host_error: str | None = None
        self._phase: str | None = None
        self._failure: str | None = None
        self._ready: bool | None = None
        self._leftovers: dict[tuple[object, ...], str] | None = None
        self._load_live: tuple[object, ...] | None = None

    def event(self, event: Event) -> None:
        """Record an event, its text and data redacted: whoever built it (an alert's
        message, a command line, an error), nothing reaches the recording unredacted."""
        text = redact_text(event.text, self.extra_secrets)
        data = redact_data(event.data, self.extra_secrets) if event.data else event.data
        self._emit(replace(event, text=text, data=data))

    def alert_event(
        self, ts_s: float, source: str, text: str, gpu: int | None, data: dict[str, Any]
    ) -> None:
        """An alert change or a failed delivery, as the alert monitor reports it (redacted)."""
        self.event(Event(ts_s, "alert", source, text, gpu, data=data))

    def _emit(self, event: Event) -> None:
        """Record an event whose text and data are redacted already."""
        self.sink.add_event(event)
        for listener in self.listeners:
            listener(event)

    def _redact(self, text: str) -> str:
        return redact_text(text, self.extra_secrets)[:MAX_TEXT]

    # --- GPUs ------------------------------------------------------------------------
    def observe_gpu(self, snapshot: GpuBoxSnapshot) -> None:
        now = snapshot.taken_at_s
        if not snapshot.available:
            if snapshot.error != self._gpu_error:
                self._gpu_error = snapshot.error
                self.event(Event(now, "gpu", "gpu", f"GPUs unavailable: {snapshot.error}"))
            return
        if self._gpu_error is not None:
            self._gpu_error = None
            self.event(Event(now, "gpu", "gpu", f"GPUs back: {snapshot.gpu_count} reporting"))
        self.sink.add_gpu(snapshot)
        for sample in snapshot.samples:
            was_lost = self._gpu_lost.get(sample.index, False)
            if sample.lost != was_lost:
                text = "fell off the bus" if sample.lost else "is back"
                self.event(Event(now, "gpu", "gpu", f"GPU {sample.index} {text}", sample.index))
            self._gpu_lost[sample.index] = sample.lost
            before = self._throttle.get(sample.index, ())
            if sample.throttle_reasons != before:
                self._throttle[sample.index] = sample.throttle_reasons
                text = (
                    f"GPU {sample.index} throttled: {', '.join(sample.throttle_reasons)}"
                    if sample.throttle_reasons
                    else f"GPU {sample.index} no longer throttled"
                )
                data = {"throttle_reasons": list(sample.throttle_reasons)}
                self.event(Event(now, "gpu", "gpu", text, sample.index, data=data))

    def observe_xid(self, event: XidEvent, now_s: float | None = None) -> None:
        """An XID from the kernel log on the Timeline; a journal entry lands once (its cursor)."""
        where = f"GPU {event.gpu_index}" if event.gpu_index is not None else event.bus_id
        text = f"XID {event.number_text} on {where}: {event.name} -> {event.action}"
        key = (
            f"xid:{event.cursor}"
            if event.cursor
            else f"xid:{digest(event.text, event.timestamp_s)}"
        )
        self.event(
            Event(
                event.timestamp_s or now_s or time.time(),
                "gpu",
                "xid",
                self._redact(text),
                event.gpu_index,
                key=key,
                data={"xid": event.xid, "severity": event.severity, "bus_id": event.bus_id},
            )
        )

    # --- service and engine ----------------------------------------------------------
    def observe_unit(self, state: UnitState | None, now_s: float, error: str | None = None) -> None:
        if error is not None:
            if error != self._host_error:
                self._host_error = error
                self.event(Event(now_s, "service", "host", f"unreachable: {self._redact(error)}"))
            return
        if self._host_error is not None:
            self._host_error = None
            self.event(Event(now_s, "service", "host", f"{self.host_label} reachable again"))
        if state is None:
            return
        key = (state.active_state, state.sub_state, state.main_pid, state.n_restarts, state.result)
        if key != self._unit_key:
            self._unit_key = key
            self.event(Event(now_s, "service", "unit", _unit_text(state), data=asdict(state)))
        if not state.is_active:
            self._end_ready(now_s, f"{state.unit} {state.active_state}")

    def observe_progress(self, progress: LoadProgress) -> None:
        now = progress.at_s
        if progress.phase != self._phase:
            previous, self._phase = self._phase, progress.phase
            if previous is None and progress.phase == "stopped":
                # Where the log reader begins, not something that happened: recorded, a
                # console opened during a start put "load phase: stopped" on the Timeline.
                return
            spans = [asdict(span) for span in progress.timeline]
            data: dict[str, Any] = {
                "phase": progress.phase,
                "previous": previous,
                "timeline": spans,
                "model": progress.facts.model,
                "engine": progress.facts.engine,
            }
            text = f"load phase: {progress.phase}"
            if progress.facts.model and progress.phase in ("starting", "weights"):
                text += f" ({progress.facts.model})"
            self.event(Event(now, "engine", "load", text, data=data))
            if progress.phase in ("stopped", "failed"):
                span = progress.timeline[-1] if progress.timeline else None
                self._end_ready(span.started_at_s if span else now, f"load {progress.phase}")
        if progress.failure_line and progress.failure_line != self._failure:
            self._failure = progress.failure_line
            line = self._redact(progress.failure_line)
            data = {"phase": previous_phase(progress), "failure_line": line}
            self.event(Event(now, "engine", "load", f"load failed: {line}", data=data))
        elif not progress.failure_line:
            self._failure = None

    def observe_load_live(self, live: LiveLoad | None) -> None:
        """The Deck's load explainer line, when what it says changes (the phase, what bounds
        the load, a lagging GPU, a problem reading, the final diagnosis): not every sample."""
        if live is None:
            return
        key = (live.phase, live.bound, live.lagging_gpu, live.problem, live.final)
        if key == self._load_live:
            return
        self._load_live = key
        data: dict[str, Any] = {
            name: getattr(live, name)
            for name in (
                "phase",
                "phase_elapsed_s",
                "bound",
                "read_bytes_per_s",
                "cpu_cores",
                "device",
                "device_read_bytes_per_s",
                "cache_resident_pct",
                "lagging_gpu",
                "final",
            )
        }
        data["problem"] = self._redact(live.problem) if live.problem else None
        prefix = "load diagnosis" if live.final else "load explainer"
        text = f"{prefix}: {self._redact(live.text)}"
        self.event(Event(live.at_s, "engine", "load", text, data=data))

    def _end_ready(self, at_s: float, why: str) -> None:
        """A stop ends readiness when it happens, not at the next start's first probe: a
        server that was ready is stamped not ready here, and the next start's first
        not-ready answer is a load under way, not "readiness lost"."""
        if self._ready:
            data = {"ready": False, "models": [], "why": why}
            self.event(Event(at_s, "engine", "readiness", f"not ready: {why}", data=data))
        self._ready = None

    def observe_readiness(self, readiness: Readiness) -> None:
        if not readiness.checked:
            return
        if readiness.ready != self._ready:
            was = self._ready
            self._ready = readiness.ready
            if readiness.ready:
                text = f"ready: {', '.join(readiness.models)}"
            elif was is None:
                return  # not ready yet while loading is not news
            else:
                text = f"readiness lost: {self._redact(readiness.error or 'no answer')}"
            data = {"ready": readiness.ready, "models": list(readiness.models)}
            self.event(Event(readiness.at_s, "engine", "readiness", text, data=data))

    def observe_metrics(self, metrics: ServerMetrics) -> None:
        self.sink.add_metrics(metrics_row(metrics))

    def observe_stall(self, at_s: float, text: str, verdict: dict[str, Any]) -> None:
        """The engine entered or left `stalled` (tui.serving.progress.incident), with evidence."""
        self.event(Event(at_s, "engine", "progress", self._redact(text), data=verdict))

    def observe_log(self, line: LogLine, now_s: float) -> None:
        if not warning_or_worse(line):  # the console skips the rest before calling: keep alike
            return
        self.observe_logs([(line, vllm_line_time_s(line.text))], now_s)

    def observe_logs(self, entries: Sequence[tuple[LogLine, float | None]], now_s: float) -> None:
        """A batch of (line, its own clock as vllm_line_time_s reads it), as observe_log
        takes them one by one; redacted together (redact_lines), a flood's pace."""
        entries = [entry for entry in entries if warning_or_worse(entry[0])]
        texts = redact_lines([line.text for line, _ in entries], self.extra_secrets)
        for (line, own_s), text in zip(entries, texts, strict=True):
            # The line's own clock first: a follower stamps file lines with the time it read them.
            ts = own_s or line.timestamp_s or now_s
            key = f"log:{line.cursor}" if line.cursor else f"log:{digest(ts, line.text)}"
            self._emit(  # redacted above, as one batch
                Event(
                    ts,
                    "log",
                    line.source or "log",
                    text[:MAX_TEXT],
                    key=key,
                    data={"level": line.level},
                )
            )

    def observe_exec(
        self, pid: int, argv: list[str], env: dict[str, str], started_s: float
    ) -> None:
        """The command line (and serving env) of a new main process: a deployment's configuration."""
        line = shlex.join(argv)
        text = f"exec pid {pid}: {line[:300]}"
        data = {"pid": pid, "argv": argv, "env": env}
        self.event(
            Event(started_s, "service", "exec", text, key=f"exec:{pid}:{started_s:.0f}", data=data)
        )

    # --- processes, audit, benchmarks ----------------------------------------------------
    def observe_listing(self, listing: ProcListing) -> None:
        now = listing.taken_at_s
        current: dict[tuple[object, ...], str] = {}
        gpus: dict[tuple[object, ...], int | None] = {}
        for proc in listing.processes:
            if proc.klass != "leftover":
                continue
            identity: tuple[object, ...] = (
                proc.identity.boot_id,
                proc.identity.pid,
                proc.identity.start_ticks,
            )
            memory = proc.gpu_memory_bytes
            held = f", {gib(memory)}" if memory else ""
            where = f" on GPU {','.join(map(str, proc.gpu_indices))}" if proc.gpu_indices else ""
            current[identity] = f"pid {proc.pid} ({self._redact(proc.command)[:80]}{held}{where})"
            gpus[identity] = proc.gpu_indices[0] if proc.gpu_indices else None
        previous = self._leftovers or {}
        for identity, text in current.items():
            if identity not in previous:
                key = f"leftover+:{digest(*identity)}"
                self.event(
                    Event(now, "gpu", "procs", f"leftover appeared: {text}", gpus[identity], key)
                )
        for identity, text in previous.items():
            if identity not in current:
                key = f"leftover-:{digest(*identity)}"
                self.event(Event(now, "gpu", "procs", f"leftover gone: {text}", None, key))
        self._leftovers = current

    @property
    def phase_seen(self) -> str | None:
        """The load phase last recorded (None before the first)."""
        return self._phase

    @property
    def ready_seen(self) -> bool | None:
        """The last readiness recorded (None: never seen ready or lost)."""
        return self._ready

    def leftover_count(self) -> int:
        return len(self._leftovers or {})

    def observe_audit(self, record: Mapping[str, Any]) -> None:
        if record.get("host") in (None, self.host_label):
            self.event(audit_event(record, self._redact))

    def observe_bench(self, run: Any, ts_s: float) -> None:
        """A benchmark run with its headline figure, marked when it does not count."""
        self.event(bench_event(run, ts_s))

    def observe_capacity(
        self, record: Mapping[str, Any], ts_s: float, history: Sequence[Any]
    ) -> None:
        """A capacity search: its answer with the bracket it proved, its SLO and its levels."""
        self.event(capacity_event(record, ts_s, history, self._redact))


def previous_phase(progress: LoadProgress) -> str:
    """The phase a failed load was in when it failed (the last span before `failed`)."""
    spans = [span.phase for span in progress.timeline if span.phase != "failed"]
    return spans[-1] if spans else progress.phase
