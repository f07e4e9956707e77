"""One host of the fleet through its Deck: its row from the unit, the log's tail, readiness,
/metrics, the GPUs and the leftovers, each step timed and failing alone.

`HostProbe` is what the collector (tui/fleet/collector.py) asks of each host; `DeckProbe`
answers it for a host the console could open, over one SSH connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from tui.core.errors import CommandTimeout, HostError, ServedeckError
from tui.core.redact import LineRedactor
from tui.core.tasks import cancel_and_wait
from tui.deck import Deck
from tui.fleet.model import FleetRow, FleetSource
from tui.fleet.rows import build_row
from tui.fleet.status_loop import LoopEnded, StatusLoop
from tui.gpu.model import GpuBoxSnapshot
from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine
from tui.ops.gpu_hints import deck_context, gpu_snapshot
from tui.procs.kill import leftovers
from tui.procs.listing import list_gpu_processes
from tui.serving.load.tracker import LoadProgress, LoadTracker
from tui.serving.metrics import MetricsPoller, ServerMetrics, metrics_from_log
from tui.serving.progress.model import ProgressVerdict
from tui.serving.progress.watch import ProgressWatch
from tui.serving.readiness import Readiness, ReadinessProbe
from tui.serving.unit.service import SHOW_PROPERTIES, UnitState, parse_systemctl_show

if TYPE_CHECKING:  # httpx loads with the first poll, not at console start
    import httpx


Fail = Callable[[ServedeckError], None]
_T = TypeVar("_T")
DEFAULT_TAIL_LINES = 300
GPU_SAMPLE_TIMEOUT_S = 3.0
LEFTOVERS_EVERY_S = 30.0
_SPLIT = "\nservedeck-fleet-status:"
# $1 unit, $2 properties, $3 lines, $4 log file: the unit's state, its status, the log's tail.
_UNIT_AND_TAIL = (
    'systemctl show "$1" --no-pager -p "$2"; s=$?; printf "\\nservedeck-fleet-status:%s\\n" "$s"; '
    'exec tail -n "$3" -- "$4"'
)
FLEET_APPS_INTERVAL_S = 30.0


class HostProbe(Protocol):
    """What the collector asks of each host: its row now (never raises), then close."""

    name: str

    async def poll(self) -> FleetRow: ...

    async def close(self) -> None: ...


class DeckProbe:
    """One host through its Deck: unit, log tail, readiness, /metrics, GPUs, leftovers."""

    def __init__(
        self,
        deck: Deck,
        *,
        label: str = "",
        source: FleetSource = "ssh",
        tail_lines: int = DEFAULT_TAIL_LINES,
    ) -> None:
        self.deck = deck
        self.name = deck.profile.name
        self.tail_lines = tail_lines
        self._base = FleetRow(
            host=self.name, reachable=True, source=source, label=label, route=deck.host_label
        )
        self._metrics: MetricsPoller | None = None
        self._metrics_url = ""
        self._scraped: ServerMetrics | None = None  # this poll's /metrics (not the log's)
        self._engine_watch = ProgressWatch(deck.profile.service.stall_after_s)
        self._http_client: httpx.AsyncClient | None = None
        self._leftovers_at: tuple[float, int] | None = None
        self._last: FleetRow | None = None
        self._loop: StatusLoop | None = None  # unit + log through one remote shell
        self._leftovers_task: asyncio.Task[int | None] | None = None
        self._leftovers_tried_at: float | None = None  # a serving host's unwaited first listing
        self.step_s: dict[str, float] = {}  # how long each part of the last poll took

    def _took(self, step: str, started: float) -> float:
        now = time.monotonic()
        self.step_s[step] = now - started
        return now

    async def _timed(self, step: str, work: Callable[[Fail], Awaitable[_T]], failed: Fail) -> _T:
        """work(failed), its duration kept in step_s (created here: a cancel before it
        starts leaves no coroutine un-awaited)."""
        started = time.monotonic()
        try:
            return await work(failed)
        finally:
            self._took(step, started)

    async def poll(self) -> FleetRow:
        self.step_s = {}
        row = await self._poll()
        self._last = row
        return row

    def _slow_row(self, took_s: float, errors: list[str]) -> FleetRow:
        """Connected but too slow to answer: the last row's figures, marked slow (not lost)."""
        base = self._last or self._base
        detail = errors[0] if errors else "timed out"
        return replace(
            base,
            reachable=False,
            error=f"{self.name}: no answer for {took_s:.1f} s (slow: {detail})",
        )

    async def _poll(self) -> FleetRow:
        errors: list[str] = []
        reachable = True
        timed_out = False
        started = time.monotonic()

        def failed(error: ServedeckError) -> None:
            nonlocal reachable, timed_out
            errors.append(str(error))
            timed_out = timed_out or isinstance(error, CommandTimeout)
            if isinstance(error, HostError) and not isinstance(error, CommandTimeout):
                reachable = False

        mark = time.monotonic()
        # The three reads are independent: one round of sessions, not three in a row.
        if self._one_session():
            (unit, progress), gpus = await asyncio.gather(
                self._timed("unit+log", self._unit_and_log, failed),
                self._timed("gpus", self._gpus, failed),
            )
        else:
            unit, progress, gpus = await asyncio.gather(
                self._unit(failed), self._progress(failed), self._gpus(failed)
            )
        mark = self._took("unit+log+gpus", mark)
        if not reachable:  # the connection is down: the rest would fail the same way
            return build_row(replace(self._base, reachable=False), errors=tuple(errors))
        if timed_out and unit is None and progress is None:  # a busy host, not a lost one
            return self._slow_row(time.monotonic() - started, errors)
        readiness, metrics = await self._http(progress, failed)
        mark = self._took("http", mark)
        verdict = await self._judge(unit, progress, gpus)
        mark = self._took("progress", mark)
        leftovers = None
        if unit is not None:  # unknown (n/a) only until the host's processes were listed
            leftovers = await self._leftovers_every(failed, wait=not unit.is_active)
            self._took("leftovers", mark)
        return build_row(
            replace(self._base, reachable=reachable),
            unit=unit,
            progress=progress,
            readiness=readiness,
            metrics=metrics,
            gpus=gpus,
            leftovers=leftovers,
            errors=tuple(errors),
            verdict=verdict,
        )

    async def _judge(
        self, unit: UnitState | None, progress: LoadProgress | None, gpus: GpuBoxSnapshot | None
    ) -> ProgressVerdict | None:
        """The engine's verdict from this poll's /metrics (None, unknown, without them: the
        log's stats are minutes apart), the GPUs and the ranks under the unit's main pid."""
        if self._scraped is None:
            return None
        return await self._engine_watch.observe(
            self.deck.host,
            unit.main_pid if unit is not None else None,
            self._scraped,
            gpus,
            loading=progress is not None and progress.is_loading,
        )

    def _one_session(self) -> bool:
        """A remote unit with a log file: `systemctl show` and `tail` share one SSH session."""
        service = self.deck.profile.service
        return (
            not self.deck.host.is_local
            and bool(self.deck.systemd_unit and service.log_file)
            and not service.use_sudo
        )

    async def _unit_and_log(self, failed: Fail) -> tuple[UnitState | None, LoadProgress | None]:
        """Through the host's status loop (one session kept open); a one-off session while
        that loop is backing off after it ended by itself."""
        loop = self._status_loop()
        if not loop.available:
            return await self._unit_and_tail(failed)
        try:
            unit, progress, problems = await loop.read()
        except LoopEnded:  # the shell ended (not the connection): this poll the old way
            return await self._unit_and_tail(failed)
        except ServedeckError as error:
            failed(error)
            return None, None
        for problem in problems:
            failed(ServedeckError(problem))
        return unit, progress

    def _status_loop(self) -> StatusLoop:
        if self._loop is None:
            from tui.hosts.ssh import SSHHost

            service = self.deck.profile.service
            assert service.unit and service.log_file and isinstance(self.deck.host, SSHHost)
            self._loop = StatusLoop(
                self.deck.host, service.unit, service.log_file, tail_lines=self.tail_lines
            )
        return self._loop

    async def _unit_and_tail(self, failed: Fail) -> tuple[UnitState | None, LoadProgress | None]:
        """Half the session starts of two commands: on a busy box each costs a login."""
        service = self.deck.profile.service
        assert service.unit and service.log_file
        argv = [
            "/bin/sh",
            "-c",
            _UNIT_AND_TAIL,
            "sh",
            service.unit,
            ",".join(SHOW_PROPERTIES),
            str(self.tail_lines),
            service.log_file,
        ]
        try:
            result = await self.deck.host.run(argv, timeout_s=15.0)
        except ServedeckError as error:
            failed(error)
            return None, None
        show, _, rest = result.stdout.partition(_SPLIT)
        status, _, tail = rest.partition("\n")
        label = self.deck.host.label
        unit = None
        if status.strip() == "0":
            unit = parse_systemctl_show(service.unit, show)
        else:
            detail = (result.stderr.strip().splitlines() or ["no output"])[0]
            failed(ServedeckError(f"{label}: systemctl show {service.unit} failed: {detail}"))
        if result.exit_status != 0:
            detail = (result.stderr.strip().splitlines() or ["no output"])[-1]
            failed(ServedeckError(f"{label}: cannot read {service.log_file}: {detail}"))
            return unit, None
        classifier = LevelClassifier()
        source = f"file:{service.log_file}"
        lines = [
            LogLine(text=text, level=classifier.classify(text), source=source)
            for text in LineRedactor()(tail.splitlines())  # redacted as it arrives
        ]
        return unit, await self._parse(lines)

    async def _parse(self, lines: list[LogLine]) -> LoadProgress | None:
        if not lines:
            return None
        tracker = LoadTracker()
        # Parsing a few hundred lines is milliseconds per host: off the event loop for 20 hosts.
        await asyncio.to_thread(tracker.feed_many, lines)
        return tracker.snapshot()

    async def _unit(self, failed: Fail) -> UnitState | None:
        controller = self.deck.service()
        if controller is None:
            return None
        try:
            return await controller.state()
        except ServedeckError as error:
            failed(error)
            return None

    async def _leftovers_every(self, failed: Fail, wait: bool = True) -> int | None:
        """The leftover count, listed again at most every LEFTOVERS_EVERY_S (a listing is costly).

        Only the first listing of a stopped or failed unit is waited for (`wait`); a
        serving host's first one, and every later one, runs beside the polls (a listing
        is several sessions, seconds on a busy box): None until it has answered, then the
        last count. A listing that failed is waited for again, so its error reaches the row.
        """
        now = time.monotonic()
        task = self._leftovers_task
        if task is not None and task.done():
            self._leftovers_task = None
            count = None if task.cancelled() or task.exception() else task.result()
            listed_at = self._leftovers_at[0] if self._leftovers_at is not None else now
            self._leftovers_at = (listed_at, count) if count is not None else None
        if self._leftovers_at is None and not wait:
            tried = self._leftovers_tried_at
            if self._leftovers_task is None and (tried is None or now - tried >= LEFTOVERS_EVERY_S):
                self._leftovers_tried_at = now
                self._leftovers_task = asyncio.create_task(
                    self._leftovers(lambda _error: None), name=f"fleet leftovers {self.name}"
                )
            return None
        if self._leftovers_at is None:
            count = await self._leftovers(failed)
            self._leftovers_at = (now, count) if count is not None else None
            return count
        if now - self._leftovers_at[0] >= LEFTOVERS_EVERY_S and self._leftovers_task is None:
            self._leftovers_at = (now, self._leftovers_at[1])
            self._leftovers_task = asyncio.create_task(
                self._leftovers(lambda _error: None), name=f"fleet leftovers {self.name}"
            )
        return self._leftovers_at[1]

    async def _progress(self, failed: Fail) -> LoadProgress | None:
        """The load phase from a short log tail, read once (no follower per host)."""
        source = self.deck.replay_log_lines(initial_lines=self.tail_lines)
        if source is None:
            return None
        try:
            lines = [line async for line in source]
        except ServedeckError as error:
            failed(error)
            return None
        return await self._parse(lines)

    async def _gpus(self, failed: Fail) -> GpuBoxSnapshot | None:
        try:
            source = await self.deck.gpu_source()
            if isinstance(getattr(source, "apps_interval_s", None), float | int):
                # The fleet needs the process list only for leftovers: not every 2 s per host.
                source.apps_interval_s = max(source.apps_interval_s, FLEET_APPS_INTERVAL_S)  # type: ignore[attr-defined]
            return await asyncio.wait_for(source.sample(), GPU_SAMPLE_TIMEOUT_S)
        except TimeoutError:
            failed(
                ServedeckError(
                    f"{self.deck.host_label}: no GPU sample in {GPU_SAMPLE_TIMEOUT_S:g} s"
                )
            )
        except ServedeckError as error:
            failed(error)
        return None

    async def _http(
        self, progress: LoadProgress | None, failed: Fail
    ) -> tuple[Readiness | None, ServerMetrics | None]:
        try:
            url = await self.deck.reachable_base_url()
        except ServedeckError as error:
            failed(error)
            return None, None
        client = self._client()
        readiness = await ReadinessProbe(url, api_key=self.deck.api_key).check(progress, client)
        metrics = self._scraped = None
        if readiness.health_ok:
            if self._metrics is None or url != self._metrics_url:  # a reconnect moves the forward
                self._metrics = MetricsPoller(url, api_key=self.deck.api_key)
                self._metrics_url = url
            try:
                metrics = self._scraped = await self._metrics.poll(client)
            except ServedeckError as error:
                failed(error)
        if metrics is None and progress is not None and progress.engine_stats is not None:
            metrics = metrics_from_log(progress.engine_stats)
        return readiness, metrics

    def _client(self) -> httpx.AsyncClient:
        """One long-lived HTTP client per host: a new one per poll loads the CA bundle (~30 ms CPU)."""
        if self._http_client is None:
            import httpx

            self._http_client = httpx.AsyncClient(timeout=httpx.Timeout(3.0, connect=2.0))
        return self._http_client

    async def _leftovers(self, failed: Fail) -> int | None:
        """Leftover GPU processes: the host's GPU processes listed, those the service left."""
        try:
            listing = await list_gpu_processes(
                self.deck.host, await gpu_snapshot(self.deck), await deck_context(self.deck)
            )
        except ServedeckError as error:
            failed(error)
            return None
        return len(leftovers(listing.processes))

    async def close(self) -> None:
        if self._leftovers_task is not None:
            await cancel_and_wait([self._leftovers_task])
        if self._loop is not None:
            with contextlib.suppress(Exception):
                await self._loop.close()
        if self._http_client is not None:
            client, self._http_client = self._http_client, None
            with contextlib.suppress(Exception):
                await client.aclose()
        await self.deck.close()
