"""The servedeck console: wires a Deck's sources to widgets through workers and messages.

Workers run the sources and post Messages; message handlers own the UI (Textual's
thread-safety rule). Every poll is re-armed only after the previous one finished,
and panes nobody is looking at are not redrawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpx
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Vertical
from textual.driver import Driver
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static, TabbedContent, TabPane
from textual.worker import Worker

from tui.bench.driver import BenchProcess
from tui.bench.history import runs_for_host
from tui.config import Profile
from tui.deck import Deck
from tui.errors import ServedeckError
from tui.gpu.history import GpuHistory
from tui.gpu.model import GpuBoxSnapshot, total_memory_bytes
from tui.hostinfo import HostOverview
from tui.keymap import COMMANDS
from tui.loadwatch import LOADING_PHASES, LoadProgress, LoadTracker
from tui.logs.line import LogLine
from tui.metrics import MetricsPoller, ServerMetrics
from tui.paths import demo_records_note
from tui.procs import KillReport, ProcListing
from tui.readiness import Readiness, ReadinessProbe
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.console_bench import BenchMixin
from tui.screens.console_guard import console_closing, while_open
from tui.screens.console_handoff import HandoffMixin
from tui.screens.console_health import HealthMixin
from tui.screens.console_processes import ProcessesMixin
from tui.screens.help import HelpScreen
from tui.screens.kill_confirm import KillConfirmScreen
from tui.service import ActionOutcome, UnitState
from widgets.bench_view import FORMULAS, BenchView
from widgets.gpu_pane import GpuPane
from widgets.header_bar import HeaderBar
from widgets.health_view import HealthView
from widgets.host_overview import HostOverviewView
from widgets.load_strip import LoadStrip
from widgets.log_pane import LogPane
from widgets.plan_view import PlanView
from widgets.procs_pane import ProcsPane
from widgets.service_line import ServiceLine

SERVICE_POLL_S = 2.0
METRICS_POLL_S = 2.0
LOG_DRAIN_S = 0.1
READINESS_POLL_S = 1.0
RETRY_S = 5.0
# How long quitting waits for cancelled workers to finish their cleanup.
_WORKERS_EXIT_WAIT_S = 5.0


def _bindings() -> list[Binding]:
    return [
        Binding(
            command.key,
            command.action,
            command.label,
            show=command.show_in_footer,
            key_display=command.key_display,
            tooltip=command.help,
            id=command.binding_id,
        )
        for command in COMMANDS
    ]


class ServedeckApp(ProcessesMixin, BenchMixin, HandoffMixin, HealthMixin, App[int]):
    """One console for one profile's Deck."""

    CSS_PATH = "app.tcss"
    TITLE = "servedeck"
    BINDINGS = _bindings()

    @dataclass
    class OverviewReady(Message):
        overview: HostOverview

    @dataclass
    class HostFailed(Message):
        message: str

    @dataclass
    class ServiceUpdate(Message):
        state: UnitState | None
        error: str | None = None

    @dataclass
    class ReadinessUpdate(Message):
        readiness: Readiness

    @dataclass
    class MetricsUpdate(Message):
        metrics: ServerMetrics | None

    @dataclass
    class ProcsUpdate(Message):
        listing: ProcListing

    @dataclass
    class ActionDone(Message):
        verb: str
        outcome: ActionOutcome | None
        error: str | None = None

    @dataclass
    class KillDone(Message):
        report: KillReport | None
        error: str | None = None

    @dataclass
    class BenchEvent(Message):
        event: object

    def __init__(self, profile: Profile, deck: Deck, overview_interval_s: float = 30.0) -> None:
        super().__init__()
        self.profile = profile
        self.deck = deck
        self.overview_interval_s = overview_interval_s
        self.sub_title = profile.name
        self.gpu_history = GpuHistory(target_fraction=0.9)
        self.tracker = LoadTracker()
        self.progress: LoadProgress | None = None
        self.metrics: ServerMetrics | None = None
        self.ready = False
        self.unit_state: UnitState | None = None
        self.listing: ProcListing | None = None
        self.last_gpu: GpuBoxSnapshot | None = None
        self.bench_process: BenchProcess | None = None
        self._incoming_lines: list[LogLine] = []
        self._last_probe_s = 0.0
        self._strip_shown: object = None
        self._strip_at_s = 0.0
        self._drain_scheduled = False
        self._clock_scheduled = False
        self._http: httpx.AsyncClient | None = None
        self._metrics_poller: MetricsPoller | None = None
        self._overview: HostOverview | None = None
        self._quitting = False
        self._full_overview_due = False
        self._overview_wake = asyncio.Event()
        self._poll_timers: dict[str, Timer] = {}

    def get_driver_class(self) -> type[Driver]:
        """Textual's terminal driver, but one whose input thread does not poll while idle."""
        driver_class = super().get_driver_class()
        if driver_class.__name__ == "LinuxDriver" and driver_class.__module__.startswith(
            "textual."
        ):
            from tui.screens.terminal_driver import QuietLinuxDriver

            return QuietLinuxDriver
        return driver_class

    # --- layout -------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        header = HeaderBar(id="header")
        header.profile_name = self.profile.name
        header.route = self.profile.host.route
        header.simulated = self.profile.is_demo
        header.read_only = self.profile.read_only
        header.browser = self.is_web
        yield header
        with TabbedContent(id="panes", initial="deck"):
            with TabPane("1 Deck", id="deck"), Vertical(id="deck-body"):
                yield ServiceLine(id="service-line")
                yield LoadStrip(id="load-strip")
                yield GpuPane(id="gpu-pane")
                yield LogPane(id="log-pane")
            with TabPane("2 Overview", id="overview"):
                yield HostOverviewView(id="host-overview")
            with TabPane("3 Processes", id="procs"), Vertical():
                yield Static("", id="procs-status", classes="pane-note")
                yield ProcsPane(id="procs-pane")
            with TabPane("4 Bench", id="bench"), Vertical():
                if self.profile.is_demo:  # the operator's real records stay clean
                    yield Static(demo_records_note(), id="bench-records", classes="pane-note")
                yield BenchView(id="bench-view")
            with TabPane("5 Plan", id="plan"), Vertical():
                yield Static("", id="plan-status", classes="pane-note")
                yield PlanView(id="plan-view")
            with TabPane("6 Health", id="health"):
                yield HealthView(id="health-view")
        yield Footer()

    def on_mount(self) -> None:
        self._tabs = self.query_one(TabbedContent)  # asked every tick: look it up once
        self._gpu_pane = self.query_one(GpuPane)
        if self.profile.keys:
            self.set_keymap(dict(self.profile.keys))
        self.query_one(HostOverviewView).show_waiting(
            f"Connecting to {self.profile.host.route} ..."
        )
        self.query_one(LoadStrip).show(None)
        self._poll_overview()
        self._poll_gpus()
        self._poll_service()
        self._follow_log()
        self.query_one(BenchView).show_history(runs_for_host(self.deck.host_label))

    def _tab_visible(self, tab_id: str) -> bool:
        return self._tabs.active == tab_id and not isinstance(
            self.screen, (HelpScreen, KillConfirmScreen)
        )

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane_id = event.pane.id
        if pane_id == "deck" and self.last_gpu is not None:
            self.query_one(GpuPane).update_view(self.last_gpu, self.gpu_history.trends())
        elif pane_id == "procs":
            self._refresh_procs()
        elif pane_id == "plan":
            self._show_plan()
        elif pane_id == "health":
            self._show_health()

    # --- overview -----------------------------------------------------------------
    @work(exclusive=True, group="overview")
    async def _poll_overview(self) -> None:
        # One loop for the console's life: the whole overview once per connection (and
        # when asked with `r`, which wakes it), then only its changing numbers. A worker
        # per poll, re-armed by a timer, raced with `r`: a read cancelled just as it
        # finished (asyncio.wait_for in 3.11 then returns the result) overwrote the request.
        while not console_closing(self):
            self._overview_wake.clear()
            full_due, self._full_overview_due = self._full_overview_due, False
            try:
                if full_due or self._overview is None:
                    overview = await self.deck.overview()
                else:
                    overview = await self.deck.refresh_overview(self._overview)
            except ServedeckError as error:
                self._overview = None  # after a failure the host may be another boot: ask again
                self.post_message(self.HostFailed(str(error)))
                wait_s = RETRY_S
            else:
                self._overview = overview
                self.post_message(self.OverviewReady(overview))
                wait_s = self.overview_interval_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._overview_wake.wait(), wait_s)

    @while_open
    def on_servedeck_app_overview_ready(self, message: OverviewReady) -> None:
        header = self.query_one(HeaderBar)
        header.connection_state = "connected"
        header.connection_detail = message.overview.hostname
        self.query_one(HostOverviewView).show_overview(message.overview)

    @while_open
    def on_servedeck_app_host_failed(self, message: HostFailed) -> None:
        header = self.query_one(HeaderBar)
        header.connection_state = "unreachable"
        header.connection_detail = ""
        self.query_one(HostOverviewView).show_error(message.message)
        self.notify(message.message, title="Host unreachable", severity="error", timeout=8)

    def poll_later(self, delay_s: float, poll: Callable[[], object], name: str) -> None:
        """Arm the next run of a poll, replacing a pending one of the same name.

        Polls also run on demand (after a service action, on a tab switch); without the
        replacement each such run would start a second timer chain that polls forever.
        """
        pending = self._poll_timers.pop(name, None)
        if pending is not None:
            pending.stop()
        self._poll_timers[name] = self.set_timer(delay_s, poll, name=name)

    # --- GPUs ---------------------------------------------------------------------
    @work(exclusive=True, group="gpu")
    async def _poll_gpus(self) -> None:
        # One long-lived loop: a timer, a worker and a message per tick would cost
        # more main-thread time than drawing the tick.
        while not console_closing(self):
            try:
                source = await self.deck.gpu_source()
                snapshot = await source.sample()
            except ServedeckError as error:
                snapshot = GpuBoxSnapshot("none", time.time(), available=False, error=str(error))
            self._show_gpus(snapshot)
            await asyncio.sleep(self.profile.gpu.refresh_s)

    def _show_gpus(self, snapshot: GpuBoxSnapshot) -> None:
        if console_closing(self):
            return
        self.last_gpu = snapshot
        self.gpu_history.add(snapshot)
        if snapshot.available:
            used_bytes, _ = total_memory_bytes(snapshot.samples)
            self.tracker.observe_memory(used_bytes, snapshot.taken_at_s)
        if self._tab_visible("deck"):
            self._gpu_pane.update_view(snapshot, self.gpu_history.trends())

    # --- service, log, load, readiness, metrics ---------------------------------------
    @work(exclusive=True, group="service")
    async def _poll_service(self) -> None:
        controller = self.deck.service()
        if controller is None:
            self.post_message(self.ServiceUpdate(None, "no systemd unit in this profile"))
            return
        try:
            self.post_message(self.ServiceUpdate(await controller.state()))
        except ServedeckError as error:
            self.post_message(self.ServiceUpdate(None, str(error)))

    @while_open
    def on_servedeck_app_service_update(self, message: ServiceUpdate) -> None:
        previous = self.unit_state
        self.unit_state = message.state
        state = message.state
        if (
            state is not None
            and previous is not None
            and previous.is_active
            and not state.is_active
        ):
            self.ready = False
            self.metrics = None
            self.tracker.observe_exit(None, time.time())
            self._refresh_procs()
        self._render_service_line(message.error)
        self._update_load()
        if message.state is not None or message.error != "no systemd unit in this profile":
            self.poll_later(SERVICE_POLL_S, self._poll_service, "service-poll")

    def _render_service_line(self, error: str | None = None) -> None:
        self.query_one(ServiceLine).show(
            self.unit_state, self.deck.host_label, self.ready, error=error
        )

    @work(exclusive=True, group="log")
    async def _follow_log(self) -> None:
        source = self.deck.log_lines(initial_lines=2000, follow=True)
        if source is None:
            self.query_one(LogPane).add_lines(
                [LogLine("no log source: set service.unit or service.log_file")]
            )
            return
        try:
            async for line in source:
                self._incoming_lines.append(line)
                if not self._drain_scheduled:
                    self._drain_scheduled = True
                    self.set_timer(LOG_DRAIN_S, self._drain_log_lines, name="log-drain")
        except ServedeckError as error:
            self._incoming_lines.append(LogLine(f"servedeck: log source failed: {error}"))
            self.poll_later(RETRY_S, self._follow_log, "log-retry")

    def _drain_log_lines(self) -> None:
        self._drain_scheduled = False
        if console_closing(self):  # a timer may fire while the app shuts down
            return
        batch, self._incoming_lines = self._incoming_lines, []
        self.tracker.feed_many(batch)
        self.query_one(LogPane).add_lines(batch)
        self._update_load()

    def _tick_load_clock(self) -> None:
        """While a load runs, its clocks (elapsed, ETA) move: redraw once a second."""
        self._clock_scheduled = False
        if not console_closing(self):
            self._update_load()

    def _update_load(self) -> None:
        self.progress = self.tracker.snapshot()
        waiting_for_http = not self.ready and ReadinessProbe.should_poll(self.progress)
        loading = self.progress.phase in LOADING_PHASES
        if (loading or waiting_for_http) and not self._clock_scheduled:
            self._clock_scheduled = True
            self.set_timer(1.0, self._tick_load_clock, name="load-clock")
        now_s = time.monotonic()
        shown = (self.progress.phase, self.progress.shards_done, self.metrics)
        # Redraw on a visible change at once, otherwise once a second for the clocks.
        if self._tab_visible("deck") and (
            shown != self._strip_shown or now_s - self._strip_at_s >= 1.0
        ):
            self._strip_shown, self._strip_at_s = shown, now_s
            self.query_one(LoadStrip).show(self.progress, self.metrics)
        now_s = time.monotonic()
        if (
            not self.ready
            and ReadinessProbe.should_poll(self.progress)
            and now_s - self._last_probe_s >= READINESS_POLL_S
        ):
            self._last_probe_s = now_s
            self._probe_readiness()

    @work(exclusive=True, group="readiness")
    async def _probe_readiness(self) -> None:
        url = await self.deck.reachable_base_url()
        probe = ReadinessProbe(url, api_key=self.deck.api_key)
        readiness = await probe.check(self.progress, client=self._http_client())
        self.post_message(self.ReadinessUpdate(readiness))

    @while_open
    def on_servedeck_app_readiness_update(self, message: ReadinessUpdate) -> None:
        if message.readiness.ready and not self.ready:
            self.ready = True
            models = ", ".join(message.readiness.models)
            self.notify(
                f"{self.profile.service.unit or 'service'} is ready: {models}", title="Ready"
            )
            self.bell()
            self._render_service_line()
            self._poll_metrics()

    @work(exclusive=True, group="metrics")
    async def _poll_metrics(self) -> None:
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
        except ServedeckError:
            metrics = None
        self.post_message(self.MetricsUpdate(metrics))

    @while_open
    def on_servedeck_app_metrics_update(self, message: MetricsUpdate) -> None:
        if message.metrics is not None:
            self.metrics = message.metrics
            self._update_load()
        if self.ready:
            self.poll_later(METRICS_POLL_S, self._poll_metrics, "metrics-poll")

    def _http_client(self) -> httpx.AsyncClient:
        """One client for every poll: a new one per request costs ~25 ms of TLS setup."""
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(3.0, connect=2.0))
        return self._http

    # --- service actions ------------------------------------------------------------
    def action_service(self, verb: str) -> None:
        controller = self.deck.service()
        if controller is None:
            self.notify("This profile names no systemd unit.", severity="warning")
            return
        if self.profile.read_only:
            self.notify(f"Read-only: {verb} is disabled.", severity="warning")
            return
        note = ""
        if verb in ("stop", "restart") and self.profile.service.engine == "vllm":
            note = "vLLM workers may survive the stop and hold GPU memory: check Processes (3)."
        action = controller.describe(verb)  # type: ignore[attr-defined]

        def confirmed(answer: bool | None) -> None:
            if answer:
                self._run_service_action(verb)

        self.push_screen(ConfirmActionScreen(action, note), confirmed)

    @work(exclusive=True, group="service-action")
    async def _run_service_action(self, verb: str) -> None:
        controller = self.deck.service()
        assert controller is not None
        try:
            outcome = await getattr(controller, verb)(confirmed=True)
        except ServedeckError as error:
            self.post_message(self.ActionDone(verb, None, str(error)))
        else:
            self.post_message(self.ActionDone(verb, outcome))

    @while_open
    def on_servedeck_app_action_done(self, message: ActionDone) -> None:
        if message.error or message.outcome is None or not message.outcome.ok:
            detail = message.error or (message.outcome.message if message.outcome else "")
            self.notify(f"{message.verb} failed: {detail}", severity="error", timeout=10)
        else:
            self.notify(f"{message.verb}: {message.outcome.message}", title="Service")
        if message.verb in ("start", "restart"):
            self.ready = False
            self.metrics = None
        self._poll_service()

    def action_refresh(self) -> None:
        self.query_one(HeaderBar).connection_state = "connecting"
        self._full_overview_due = True  # asked for: the whole overview again, not only its numbers
        self._overview_wake.set()
        self._refresh_procs()

    # --- general --------------------------------------------------------------------
    def action_help(self) -> None:
        self.push_screen(HelpScreen(COMMANDS, self._effective_keys(), extra=FORMULAS))

    @property
    def quitting(self) -> bool:
        """True from the moment the console starts closing: no new work begins."""
        return self._quitting

    def run_worker(self, *args: Any, **kwargs: Any) -> Worker[Any]:
        """Work asked for once quitting has begun (a timer's late tick) never starts."""
        worker: Worker[Any] = super().run_worker(*args, **kwargs)
        if self._quitting:
            worker.cancel()
        return worker

    async def _let_workers_finish(self) -> None:
        """Give cancelled workers time to finish before the event loop closes.

        A worker cancelled while asyncio is still connecting a new subprocess's pipes
        must finish before the loop is torn down: the teardown cancels asyncio's own
        pipe task too, and then CPython (gh-125502, unfixed in 3.11) waits for that
        process forever, so the console would never exit.
        """
        self._quitting = True
        self.workers.cancel_all()
        workers = list(self.workers)
        if workers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*(worker.wait() for worker in workers), return_exceptions=True),
                    _WORKERS_EXIT_WAIT_S,
                )

    def _effective_keys(self) -> dict[str, str]:
        keymap = dict(self.profile.keys)
        return {
            command.binding_id: keymap.get(command.binding_id, command.key_display or command.key)
            for command in COMMANDS
        }

    def action_show_tab(self, tab_id: str) -> None:
        self.query_one(TabbedContent).active = tab_id

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for command in COMMANDS:
            if command.action == "command_palette":
                continue
            yield SystemCommand(
                command.label, command.help, lambda action=command.action: self.run_action(action)
            )

    async def on_unmount(self) -> None:
        await self._let_workers_finish()
        if self._http is not None:
            await self._http.aclose()
        if self.bench_process is not None:
            await self.bench_process.kill()
        await self.deck.close()
