"""The console's serving state: the load strip and its ETA, readiness, metrics, the progress verdict.

A part of ServedeckApp. It owns the load tracker the log feeds, whether the server is
ready, its latest metrics and the engine's progress verdict; the readiness probe and the
metrics poll share one kept-alive HTTP client. The strip redraws on a visible change at
once, else once a second while a load's clocks move.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_bench import BenchPart
from tui.app.console_guard import console_closing
from tui.app.console_health import SourceHealthPart
from tui.app.console_load_live import LoadLivePart
from tui.app.console_protocol import Console, Part
from tui.app.console_record import RecordPart
from tui.app.console_sleep import SleepPart
from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.serving.load.eta import ready_clock_for
from tui.serving.load.tracker import LOADING_PHASES, LoadProgress, LoadTracker, Phase
from tui.serving.metrics import MetricsPoller, ServerMetrics
from tui.serving.progress.incident import StallIncidents
from tui.serving.progress.watch import ProgressWatch
from tui.serving.readiness import ReadinessProbe
from tui.source_health import cut_as_of_text, unknown_since_text
from widgets.load_strip import LoadStrip
from widgets.sure_timer import set_sure_timer

if TYPE_CHECKING:  # loaded when first used: the first frame needs neither
    import httpx

    from tui.deck import Deck

METRICS_POLL_S = 2.0
READINESS_POLL_S = 1.0


class ServingPart(Part):
    """The load as the log tells it, the server's readiness and metrics, the engine's progress."""

    def __init__(
        self,
        deck: Deck,
        console: Console,
        sources: SourceHealthPart,
        record: RecordPart,
        load_live: LoadLivePart,
        bench: BenchPart,
        sleep_mode: SleepPart,
    ) -> None:
        super().__init__(deck, console)
        self._sources = sources
        self._record = record
        self._load_live = load_live
        self._bench = bench  # its warm-up is no stall
        self.sleep_mode = sleep_mode  # what the readiness probe says of vLLM's sleep mode
        self.tracker = LoadTracker()
        self.ready_clock = ready_clock_for(
            deck.host_label, deck.stated_load_s, deck.stated_phase_shares()
        )
        self.progress: LoadProgress | None = None
        self.metrics: ServerMetrics | None = None
        self.engine_progress = ProgressWatch(self.profile.service.stall_after_s)
        self.stall_incidents = StallIncidents(deck.host.label)
        self.ready = False
        self.asleep = False  # vLLM's sleep mode, from the last readiness poll
        self._last_probe_s = 0.0
        self._strip_shown: object = None
        self._strip_at_s = 0.0
        self._clock_scheduled = False
        self._http: httpx.AsyncClient | None = None
        self._metrics_poller: MetricsPoller | None = None
        # The load as the connection's cut found it: drawn marked and still until a log
        # line or a unit read arrives over the new connection.
        self.load_as_of: LoadProgress | None = None

    def mount(self) -> None:
        """The strip's first state: waiting for a load, or nothing to follow at all."""
        strip = self.console.query_one(LoadStrip)
        service = self.profile.service
        strip.nothing_to_follow = (
            not service.unit and not service.log_file and self.deck.service() is None
        )
        strip.show(None)

    def server_gone(self) -> None:
        """The server stopped or restarts: not ready, and its metrics are of a server gone."""
        self.ready = False
        self.metrics = None

    def freeze_load(self) -> None:
        """The connection was cut: the strip keeps the load as of now, marked, not counting."""
        if self.load_as_of is None and not self.deck.host.is_local:
            self.load_as_of = self.tracker.snapshot()
            self.update_load()

    def _tick_load_clock(self) -> None:
        """While a load runs, its clocks (elapsed, ETA) move: redraw once a second."""
        self._clock_scheduled = False
        if not console_closing(self.console):
            self.update_load()

    def _unit_active(self) -> bool | None:
        unit_state = self.console.unit_state
        return unit_state.is_active if unit_state is not None else None

    def update_load(self) -> None:
        self.progress = self.tracker.snapshot()
        self._record.progress(self.progress)
        if self.ready and self.progress.phase in (Phase.STOPPED, Phase.FAILED):
            self.server_gone()  # the log says it stopped: readiness ends now, not at a poll
            self.console.render_service_line()
        unit_active = self._unit_active()
        waiting_for_http = not self.ready and ReadinessProbe.should_poll(self.progress, unit_active)
        loading = self.progress.phase in LOADING_PHASES
        if (loading or waiting_for_http) and not self._clock_scheduled:
            self._clock_scheduled = True
            set_sure_timer(self.console, 1.0, self._tick_load_clock, name="load-clock")
        now_s = time.monotonic()
        ready = self.ready_clock.update(self.progress)  # also records a load that reached serving
        self._load_live.watch_if_loading()
        ready = None if self.ready else ready
        frozen = self.load_as_of
        shown = (self.progress.phase, self.progress.shards_done, self.metrics, frozen)
        # Redraw on a visible change at once, otherwise once a second for the clocks.
        if self.console.tab_visible("deck") and (
            shown != self._strip_shown or now_s - self._strip_at_s >= 1.0
        ):
            self._strip_shown, self._strip_at_s = shown, now_s
            unknown = self._sources.service_unknown_since_s
            self.console.query_one(LoadStrip).show(
                frozen or self.progress,
                self.metrics,
                None if frozen else ready,
                unknown=unknown_since_text(unknown) if unknown is not None else None,
                as_of=None if frozen is None else cut_as_of_text(frozen.at_s),
            )
        now_s = time.monotonic()
        if (
            not self.ready
            and ReadinessProbe.should_poll(self.progress, unit_active)
            and now_s - self._last_probe_s >= READINESS_POLL_S
        ):
            self._last_probe_s = now_s
            self.probe_readiness()

    def probe_failed(self) -> None:
        """The probe's worker raised: the next tick of the load clock retries."""
        self._last_probe_s = time.monotonic()

    @console_worker("readiness", pane="readiness", what="probe the server's readiness")
    async def probe_readiness(self) -> None:
        url = await self.deck.reachable_base_url()
        probe = ReadinessProbe(url, api_key=self.deck.api_key)
        readiness = await probe.check(self.progress, client=self._http_client())
        self.post_message(messages.ReadinessUpdate(readiness))

    def readiness_update(self, message: messages.ReadinessUpdate) -> None:
        self._sources.ok("readiness")
        if message.readiness.epoch != self.tracker.epoch or self._unit_active() is False:
            return  # asked before a stop (or a new start): it speaks of a server now gone
        self._record.readiness(message.readiness)
        self.sleep_mode.observe(message.readiness)
        if bool(message.readiness.asleep) != self.asleep:  # never "ready" nor "idle" asleep
            self.asleep = bool(message.readiness.asleep)
            self.console.render_service_line()
        if message.readiness.ready and not self.ready:
            self.ready = True
            models = ", ".join(message.readiness.models)
            self.console.notify(
                f"{self.profile.service.unit or 'service'} is ready: {models}", title="Ready"
            )
            self.console.bell()
            self.console.render_service_line()
            self.poll_metrics()
            self._load_live.explain_after_ready()

    def sleep_done(self) -> None:
        """A sleep or wake ran: asleep is never ready; awake, the probe says ready again."""
        self.ready = False
        self._last_probe_s = 0.0
        self.probe_readiness()

    @console_worker("metrics", pane="metrics", what="read the server's metrics")
    async def poll_metrics(self) -> None:
        if not self.ready:
            return
        try:
            url = await self.deck.reachable_base_url()
            if (
                self._metrics_poller is None
                or self._metrics_poller.url != url.rstrip("/") + "/metrics"
            ):
                self._metrics_poller = MetricsPoller(url, api_key=self.deck.api_key)
            metrics = await self._metrics_poller.poll(client=self._http_client())
        except ServedeckError as error:
            self.post_message(messages.MetricsUpdate(None, str(error)))
        else:
            self.post_message(messages.MetricsUpdate(metrics))
            unit_state = self.console.unit_state
            main_pid = unit_state.main_pid if unit_state else None
            verdict = await self.engine_progress.observe(
                self.deck.host,
                main_pid,
                metrics,
                self.console.last_gpu,
                warmup=self._bench.warming_up,
            )
            self.post_message(messages.ProgressUpdate(verdict))

    def progress_update(
        self, message: messages.ProgressUpdate, stall_toast: Callable[[str], str]
    ) -> None:
        """The engine's progress verdict: on the service line; a stall is an incident, its
        toast (`stall_toast`) offering the stacks and the guarded restart."""
        recording = self._record.recording
        feed, monitor = (recording.feed, recording.monitor) if recording else (None, None)
        if self.stall_incidents.note(message.verdict, feed, monitor) == "entered":
            headline = message.verdict.headline()
            self.console.notify(stall_toast(headline), title="Engine stalled", severity="error")
        self.console.render_service_line()

    def metrics_update(self, message: messages.MetricsUpdate) -> None:
        if not self.ready:
            return  # asked while ready, answered after a stop: the server it read is gone
        self._record.metrics(message.metrics)
        if message.metrics is not None:
            self.metrics = message.metrics
            self._sources.ok("metrics")
            self.update_load()
        elif self.ready:  # the last metrics stay on screen; the note gives their age
            self._sources.set("metrics", message.error or "no answer", METRICS_POLL_S)
        if self.ready:
            self.console.poll_later(METRICS_POLL_S, self.poll_metrics, "metrics-poll")

    def _http_client(self) -> httpx.AsyncClient:
        """One client for every poll: a new one per request costs ~25 ms of TLS setup."""
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(timeout=httpx.Timeout(3.0, connect=2.0))
        return self._http

    async def close(self) -> None:
        """The HTTP client's connections close with the console."""
        if self._http is not None:
            await self._http.aclose()
