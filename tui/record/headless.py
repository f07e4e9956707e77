"""`servedeck record`: the Deck's sources polled without a console, fed to a Recorder.

Each source is its own task with its own cadence; a failing source becomes a
recorded state ("unreachable: ...") and is retried, never the end of the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from tui.alerts.monitor import AlertMonitor
from tui.bench.capacity.history import capacity_history_path, read_capacity_history
from tui.bench.history import history_path
from tui.bench.model import result_from_dict
from tui.core.errors import ServedeckError
from tui.core.paths import audit_log_path
from tui.core.tasks import cancel_and_wait
from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot, total_memory_bytes
from tui.health.xid.follow import FollowState, follow_xids, gpu_buses, kernel_journal_file
from tui.logs.line import LogLine
from tui.ops.gpu_hints import deck_context
from tui.procs import list_gpu_processes
from tui.record.execinfo import read_exec
from tui.record.feed import RecordFeed
from tui.record.model import Event
from tui.serving.load.tracker import LoadTracker
from tui.serving.metrics import MetricsPoller
from tui.serving.progress.incident import StallIncidents
from tui.serving.progress.watch import ProgressWatch
from tui.serving.readiness import Readiness, ReadinessProbe
from tui.serving.unit.service import UnitState

if TYPE_CHECKING:
    from tui.health.xid.decode import XidEvent

SERVICE_POLL_S = 2.0
METRICS_POLL_S = 5.0
READINESS_POLL_S = 1.0
PROCS_POLL_S = 10.0
FILES_POLL_S = 2.0
RETRY_S = 5.0
CATCH_UP_LINES = 2000


@dataclass
class Cadence:
    """How often each source is read (tests compress them)."""

    gpu_s: float = 1.0
    service_s: float = SERVICE_POLL_S
    metrics_s: float = METRICS_POLL_S
    readiness_s: float = READINESS_POLL_S
    procs_s: float = PROCS_POLL_S
    files_s: float = FILES_POLL_S
    retry_s: float = RETRY_S


def observe_capacity_records(feed: RecordFeed, records: list[object], host: str) -> None:
    """Record the new capacity searches of `host` (with the history, for their spread)."""
    mine = [
        record
        for record in records
        if isinstance(record, dict) and (record.get("context") or {}).get("host") == host
    ]
    if mine:
        history = read_capacity_history()
        for record in mine:
            feed.observe_capacity(record, time.time(), history)


class FileFollower:
    """New records of an append-only JSONL file (audit log, bench history) since the last look.

    Reads only the bytes appended since the previous call; a torn last line waits for
    its end, a shrunken file (rotated) is read from the start.
    """

    def __init__(self, path: Path, parse: Callable[[dict[str, Any]], object] | None = None) -> None:
        self.path = path
        self._parse = parse
        try:
            self._offset = path.stat().st_size
        except OSError:
            self._offset = 0

    def new(self) -> list[object]:
        try:
            with self.path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < self._offset:
                    self._offset = 0
                handle.seek(self._offset)
                chunk = handle.read()
        except OSError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        records: list[object] = []
        for raw in complete.splitlines():
            try:
                data = json.loads(raw)
                if isinstance(data, dict):
                    records.append(self._parse(data) if self._parse else data)
            except (ValueError, TypeError, KeyError):
                continue
        return records


class HeadlessRecorder:
    """Runs every source of a Deck into a RecordFeed until stopped."""

    def __init__(
        self,
        deck: Deck,
        feed: RecordFeed,
        cadence: Cadence | None = None,
        monitor: AlertMonitor | None = None,
    ) -> None:
        self.deck = deck
        self.feed = feed
        self.monitor = monitor
        self.cadence = cadence or Cadence(gpu_s=deck.profile.gpu.refresh_s)
        self.tracker = LoadTracker()
        self.ready = False
        self.last_gpu: GpuBoxSnapshot | None = None
        self.progress = ProgressWatch(deck.profile.service.stall_after_s)
        self.stalls = StallIncidents(deck.host.label)
        self._progress = self.tracker.snapshot()
        self._http: httpx.AsyncClient | None = None
        self.on_tick: list[Callable[[HeadlessRecorder], None]] = []
        self.unit_state: UnitState | None = None
        self.log_seen = False

    async def run(self, seconds: float | None = None, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(3.0, connect=2.0))
        tasks = [
            asyncio.create_task(loop())
            for loop in (
                self._gpus,
                self._service,
                self._log,
                self._http_side,
                self._procs,
                self._files,
                self._connection,
                self._xids,
            )
        ]
        try:
            if seconds is None:
                await stop.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), seconds)
        finally:
            await cancel_and_wait(tasks)
            await self._http.aclose()

    def _ticked(self) -> None:
        for callback in self.on_tick:
            callback(self)

    async def _gpus(self) -> None:
        while True:
            try:
                source = await self.deck.gpu_source()
                snapshot = await source.sample()
            except ServedeckError as error:
                snapshot = GpuBoxSnapshot("none", time.time(), available=False, error=str(error))
            self.last_gpu = snapshot
            if snapshot.available:
                used, _ = total_memory_bytes(snapshot.samples)
                self.tracker.observe_memory(used, snapshot.taken_at_s)
            self.feed.observe_gpu(snapshot)
            if self.monitor is not None:
                self.monitor.observe_gpu(snapshot)
            self._ticked()
            await asyncio.sleep(self.cadence.gpu_s)

    async def _xids(self) -> None:
        """The kernel log's XIDs onto the Timeline and through the alert rules, once GPUs are seen."""
        journal = kernel_journal_file()
        if not self.deck.has_kernel_log and journal is None:
            return  # the simulated box has no kernel log
        while (buses := gpu_buses(self.last_gpu)) is None:
            await asyncio.sleep(self.cadence.gpu_s)
        lost: list[str] = []

        def on_event(event: XidEvent) -> None:
            self.feed.observe_xid(event)
            if self.monitor is not None:
                self.monitor.observe_xid(event)

        def on_state(state: FollowState) -> None:
            if state.following == (not lost):
                return
            text = f"kernel log (XIDs) lost: {state.reason}" if not state.following else ""
            lost[:] = [text] if text else []
            self.feed.event(
                Event(
                    time.time(),
                    "gpu",
                    "kernel",
                    text or f"kernel log (XIDs) followed ({state.source})",
                )
            )

        await follow_xids(self.deck.host, buses, on_event, on_state, journal_file=journal)

    async def _service(self) -> None:
        controller = self.deck.service()
        if controller is None:
            return
        while True:
            try:
                state = await controller.state()
            except ServedeckError as error:
                self.feed.observe_unit(None, time.time(), str(error))
            else:
                previous, self.unit_state = self.unit_state, state
                if state.main_pid and (previous is None or previous.main_pid != state.main_pid):
                    await self._exec(state.main_pid, state.started_at_s or time.time())
                if previous is not None and previous.is_active and not state.is_active:
                    self.ready = False
                    self.tracker.observe_exit(state.exit_status, time.time())
                    self._observe_progress()
                self.feed.observe_unit(state, time.time())
                if self.monitor is not None:
                    self.monitor.observe_unit(state)
            self._ticked()
            await asyncio.sleep(self.cadence.service_s)

    async def _exec(self, pid: int, started_s: float) -> None:
        found = await read_exec(self.deck.host, pid, self.feed.extra_secrets)
        if found is not None:
            self.feed.observe_exec(pid, found[0], found[1], started_s)

    def _observe_progress(self) -> None:
        self._progress = self.tracker.snapshot()
        self.feed.observe_progress(self._progress)

    async def _log(self) -> None:
        await self._catch_up()
        while True:
            source = self.deck.log_lines(initial_lines=0, follow=True)
            if source is None:
                return
            try:
                async for line in source:
                    self._line(line)
            except ServedeckError as error:
                self._line(LogLine(f"servedeck: log source failed: {error}", level="WARNING"))
            await asyncio.sleep(self.cadence.retry_s)

    async def _catch_up(self) -> None:
        """Where the service is now (a recorder started after the load): the log's recent
        lines go to the load tracker only; their warnings were the past, not new events."""
        source = self.deck.log_lines(initial_lines=CATCH_UP_LINES, follow=False)
        if source is None:
            self.log_seen = True  # no log: readiness is polled without waiting for one
            return
        try:
            self.tracker.feed_many([line async for line in source])
        except ServedeckError:
            pass  # the follow below retries and records the failure
        self.log_seen = True
        self._observe_progress()

    def _line(self, line: LogLine) -> None:
        now = time.time()
        self.progress.feed_log((line.text,))
        self.tracker.apply(line)
        self.feed.observe_log(line, now)
        self._observe_progress()

    async def _http_side(self) -> None:
        poller: MetricsPoller | None = None
        last_metrics = 0.0
        while True:
            try:
                url = await self.deck.reachable_base_url()
            except ServedeckError as error:
                self.feed.observe_unit(None, time.time(), str(error))
                await asyncio.sleep(self.cadence.retry_s)
                continue
            if not self.ready:
                progress = self.tracker.snapshot() if self.log_seen else None
                if self.log_seen and (
                    ReadinessProbe.should_poll(progress)
                    or self.feed.ready_seen
                    or progress.phase == "stopped"  # type: ignore[union-attr]
                ):
                    probe = ReadinessProbe(url, api_key=self.deck.api_key)
                    readiness = await probe.check(None, client=self._http)
                    self._readiness(readiness)
                await asyncio.sleep(self.cadence.readiness_s)
                continue
            now = time.monotonic()
            if now - last_metrics >= self.cadence.metrics_s:
                last_metrics = now
                if poller is None or poller.url != url.rstrip("/") + "/metrics":
                    poller = MetricsPoller(url, api_key=self.deck.api_key)
                try:
                    metrics = await poller.poll(client=self._http)
                except ServedeckError:
                    # No answer: is it still ready? The probe records the loss.
                    readiness = await ReadinessProbe(url, api_key=self.deck.api_key).check(
                        None, client=self._http
                    )
                    self._readiness(readiness)
                else:
                    self.feed.observe_metrics(metrics)
                    if self.monitor is not None:
                        self.monitor.observe_metrics(metrics)
                        self.monitor.observe_ready(True, metrics.at_s)
                    main_pid = self.unit_state.main_pid if self.unit_state else None
                    verdict = await self.progress.observe(
                        self.deck.host, main_pid, metrics, self.last_gpu
                    )
                    self.stalls.note(verdict, self.feed, self.monitor)
                self._ticked()
            await asyncio.sleep(min(self.cadence.readiness_s, self.cadence.metrics_s))

    def _readiness(self, readiness: Readiness) -> None:
        self.feed.observe_readiness(readiness)
        self.ready = readiness.ready
        if self.monitor is not None and readiness.checked:
            self.monitor.observe_ready(readiness.ready, readiness.at_s)

    async def _connection(self) -> None:
        """An SSH host's connection lost and re-made (the sources themselves just retry)."""
        host = self.deck.host
        if not hasattr(host, "connects"):
            return
        was_connected, seen = False, 0
        while True:
            connected, connects = bool(getattr(host, "connected", False)), int(host.connects)
            now = time.time()
            if was_connected and not connected:
                self.feed.event(Event(now, "service", "host", f"connection to {host.label} lost"))
            if connects > seen and seen > 0:
                lost = "" if not was_connected or not connected else " (it had dropped)"
                text = f"reconnected to {host.label}{lost}"
                self.feed.event(Event(now, "service", "host", text))
            was_connected, seen = connected, connects
            await asyncio.sleep(self.cadence.gpu_s)

    async def _procs(self) -> None:
        while True:
            try:
                gpu = self.last_gpu if self.last_gpu and self.last_gpu.available else None
                listing = await list_gpu_processes(
                    self.deck.host, gpu, await deck_context(self.deck)
                )
            except ServedeckError:
                pass  # the unit poll records the host as unreachable
            else:
                self.feed.observe_listing(listing)
                if self.monitor is not None:
                    self.monitor.observe_leftovers(self.feed.leftover_count(), listing.taken_at_s)
            self._ticked()
            await asyncio.sleep(self.cadence.procs_s)

    async def _files(self) -> None:
        audit = FileFollower(audit_log_path())
        bench = FileFollower(history_path(), result_from_dict)
        capacity = FileFollower(capacity_history_path())
        while True:
            for record in audit.new():
                self.feed.observe_audit(record)  # type: ignore[arg-type]
            for run in bench.new():
                if run.context.host == self.deck.host_label:  # type: ignore[attr-defined]
                    self.feed.observe_bench(run, time.time())
            observe_capacity_records(self.feed, capacity.new(), self.deck.host_label)
            await asyncio.sleep(self.cadence.files_s)
