"""The servedeck console: wires a Deck's sources to widgets through workers and messages.

Workers run the sources and post Messages; message handlers own the UI (Textual's
thread-safety rule). Every poll is re-armed only after the previous one finished,
and panes nobody is looking at are not redrawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from textual import events
from textual.actions import parse as parse_action
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.notifications import Notify
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import Static, TabbedContent, TabPane
from textual.worker import Worker

from tui.app import messages
from tui.app.console_bench import BenchPart
from tui.app.console_guard import console_closing, while_open
from tui.app.console_handoff import HandoffPart
from tui.app.console_hardware import HardwarePart
from tui.app.console_health import HOST_RETRY_S, POLL_RESTART_S, SourceHealthPart
from tui.app.console_load_live import LoadLivePart
from tui.app.console_processes import ProcessesPart
from tui.app.console_record import RecordPart
from tui.app.console_restart_watch import RestartWatchPart
from tui.app.console_sleep import SleepPart
from tui.app.console_workers import WorkerFailed, console_worker, failure_text
from tui.core.audit import append_audit
from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.core.formatting import counted
from tui.core.keymap import COMMANDS, commands_in, effective_keys
from tui.core.paths import demo_records_note
from tui.core.redact import redact_text
from tui.deck import Deck
from tui.gpu.history import GpuHistory
from tui.gpu.model import GpuBoxSnapshot, total_memory_bytes
from tui.hints import setup_hint, short_setup_hint
from tui.hostfacts.hostinfo import HostOverview
from tui.logs.line import LineQueue, LogLine, texts_of
from tui.offered import action_offered, focus_target, help_scopes, refused_read_only
from tui.procs.kill import leftovers, leftovers_note
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.help import HelpScreen
from tui.screens.kill_confirm import KillConfirmScreen
from tui.serving.load.eta import ready_clock_for
from tui.serving.load.tracker import LOADING_PHASES, LoadProgress, LoadTracker, Phase
from tui.serving.metrics import MetricsPoller, ServerMetrics
from tui.serving.progress.incident import StallIncidents
from tui.serving.progress.watch import ProgressWatch
from tui.serving.readiness import ReadinessProbe
from tui.serving.unit.service import UnitState, audit_refusal
from tui.source_health import cut_as_of_text, unknown_since_text
from widgets.bench_view import FORMULAS, BenchView
from widgets.footer import Footer
from widgets.gpu_pane import GpuPane
from widgets.header_bar import HeaderBar
from widgets.health_view import HealthView
from widgets.host_overview import HostOverviewView
from widgets.keys import bindings_for
from widgets.load_strip import LoadStrip
from widgets.load_why import LoadWhy
from widgets.log_pane import LogPane
from widgets.plan_view import PlanView
from widgets.procs_pane import ProcsPane
from widgets.service_line import ServiceLine
from widgets.sure_timer import set_sure_timer

if TYPE_CHECKING:  # loaded when first used: the first frame needs neither
    import httpx


SERVICE_POLL_S = 1.0  # a crashed or stopped server shows within 2 s
# A unit steady in its state (active, inactive or failed for SERVICE_SETTLE_S, no action
# of ours since) is read only this often: each read is a `systemctl show` process here and
# an SSH channel on a remote host. Meanwhile a second's look at what is free (the log's
# load phase, the main pid in /proc here) reads it at once when it may have changed.
SERVICE_SETTLED_POLL_S = 10.0
SERVICE_SETTLE_S = 30.0
_SETTLED_STATES = frozenset(("active", "inactive", "failed"))
METRICS_POLL_S = 2.0
LOG_DRAIN_S = 0.1
LOG_DRAIN_LINES = 2000  # per turn of the event loop: a flood's backlog must not hold it
LOG_BACKLOG_LINES = 20_000  # read but not yet drained; the log source waits beyond it
# Allocations between young garbage collections while a console runs (Python's default is
# 700): in a log flood most lines are drawn and freed before a collection would walk them;
# measured on a 200,000-line flood, GC time 410 -> 115 ms and no full collection. The most
# cyclic garbage this lets wait is bounded by it.
GC_YOUNG_OBJECTS = 20_000
READINESS_POLL_S = 1.0
RETRY_S = 2.0  # a log source that failed to start is tried again this often
_NO_UNIT = "no systemd unit in this profile"
# How long quitting waits for cancelled workers to finish their cleanup.
_WORKERS_EXIT_WAIT_S = 5.0


class ServedeckApp(App[int]):
    """One console for one profile's Deck: the core panes' polls, and the parts that own
    the rest (tui/app/console_*.py), each built with the Deck and this app as its Console."""

    CSS_PATH = "app.tcss"
    TITLE = "servedeck"
    BINDINGS = bindings_for("app")

    def __init__(self, profile: Profile, deck: Deck, overview_interval_s: float = 30.0) -> None:
        super().__init__()
        self.profile = profile
        self.deck = deck
        self.overview_interval_s = overview_interval_s
        self.sub_title = profile.name
        self.gpu_history = GpuHistory(target_fraction=0.9)
        self.tracker = LoadTracker()
        self.ready_clock = ready_clock_for(
            deck.host_label, deck.stated_load_s, deck.stated_phase_shares()
        )
        self.progress: LoadProgress | None = None
        self.metrics: ServerMetrics | None = None
        self.engine_progress = ProgressWatch(profile.service.stall_after_s)
        self.stall_incidents = StallIncidents(deck.host.label)
        self.ready = False
        self.asleep = False  # vLLM's sleep mode, from the last readiness poll
        self.unit_state: UnitState | None = None
        self.last_gpu: GpuBoxSnapshot | None = None
        self._incoming_lines = LineQueue()  # read, not yet drained: as the batches read
        self._last_probe_s = 0.0
        # The service poll's pace (_service_read_due): when the unit last changed, when it
        # was last read and the log's load phase then (monotonic seconds).
        self._service_changed_s = float("-inf")
        self._service_read_s = float("-inf")
        self._service_read_phase: object = None
        self._strip_shown: object = None
        self._strip_at_s = 0.0
        self._drain_timer: Timer | None = None  # the next log drain, while one is due
        self._drain_soon = False  # that drain is the flood's, 1 ms away
        self._gc_thresholds: tuple[int, int, int] | None = None  # to restore on unmount
        self._clock_scheduled = False
        self._http: httpx.AsyncClient | None = None
        self._metrics_poller: MetricsPoller | None = None
        self._overview: HostOverview | None = None
        self._quitting = False
        self._full_overview_due = False
        self._overview_wake = asyncio.Event()
        self._poll_timers: dict[str, Timer] = {}
        # The load as the connection's cut found it: drawn marked and still until a log
        # line or a unit read arrives over the new connection.
        self._load_as_of: LoadProgress | None = None
        self._service_error: str | None = None  # the last service poll's error
        self._last_good_gpu: GpuBoxSnapshot | None = None
        self._last_good_overview: HostOverview | None = None
        # The parts: each owns its state and workers (tui/app/console_*.py).
        self.sources = SourceHealthPart(
            deck,
            self,
            on_cut=self._freeze_load,
            wake_overview=self._overview_wake.set,
            gpu_seen=lambda: self._last_good_gpu is not None,
        )
        self.record = RecordPart(deck, self)
        self.procs = ProcessesPart(
            deck, self, self.sources, self.record, host_rebooted=self._read_whole_host
        )
        self.hardware = HardwarePart(deck, self, self.sources, self.record)
        self.bench = BenchPart(deck, self)
        self.handoff = HandoffPart(deck, self)
        self.load_live = LoadLivePart(deck, self, self.record)
        self.restart_watch = RestartWatchPart(deck, self, self.action_kill_leftovers)
        self.sleep = SleepPart(deck, self)

    def get_default_screen(self) -> Screen:
        """The main screen, whose partial updates draw only the changed lines (perf)."""
        from tui.screens.cropped_screen import CroppedScreen

        return CroppedScreen(id="_default")

    def get_driver_class(self) -> type[Driver]:
        """Textual's terminal driver, but one whose input thread does not poll while idle."""
        driver_class = super().get_driver_class()
        if driver_class.__name__ == "LinuxDriver" and driver_class.__module__.startswith(
            "textual."
        ):
            from tui.app.terminal_driver import QuietLinuxDriver

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
                yield Static("", id="deck-note", classes="pane-note")
                yield LoadStrip(id="load-strip")
                yield LoadWhy(id="load-why")
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
            with TabPane("7 Health", id="health"):
                yield HealthView(id="health-view")
        # The palette is on `?`, `:` and ctrl+p: 80 columns of footer go to the keys that work here.
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self._tabs = self.query_one(TabbedContent)  # asked every tick: look it up once
        # Tab goes between the panes' widgets that have keys; the tab bar has none of its
        # own (the number keys switch panes), so it takes no focus.
        self._tabs.query_one("ContentTabs").can_focus = False
        self._gpu_pane = self.query_one(GpuPane)
        if self.profile.keys:
            self.set_keymap(dict(self.profile.keys))
        self.query_one(HostOverviewView).show_waiting(
            f"Connecting to {self.profile.host.route} ..."
        )
        strip = self.query_one(LoadStrip)
        service = self.profile.service
        strip.nothing_to_follow = (
            not service.unit and not service.log_file and self.deck.service() is None
        )
        strip.show(None)
        if short_setup_hint(self.profile):  # the whole hint is in the log pane
            self.notify(f"{short_setup_hint(self.profile)}", title="Nothing to watch", timeout=15)
        self.query_one("#deck-note", Static).display = False
        # The first frame first: the sources load NVML, SQLite and httpx (~100 ms).
        self.call_after_refresh(self.call_later, self._start_sources)

    def _start_sources(self) -> None:
        if console_closing(self):
            return
        # The modules and widgets of a started console live as long as it does: a full
        # collection that walks them all again held the loop 40-90 ms in a log flood.
        gc.freeze()
        if self._gc_thresholds is None:
            self._gc_thresholds = gc.get_threshold()
        gc.set_threshold(GC_YOUNG_OBJECTS, *self._gc_thresholds[1:])
        self.record.start()
        self._poll_overview()
        self._poll_gpus()
        self._poll_service()
        self._follow_log()
        self.bench.show_history()
        self.sources.start()

    def tab_visible(self, tab_id: str) -> bool:
        return self._tabs.active == tab_id and not isinstance(
            self.screen, (HelpScreen, KillConfirmScreen)
        )

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane_id = event.pane.id
        self._focus_pane(pane_id or "")
        self.refresh_bindings()  # keys of one pane (k on Processes) show only there
        if pane_id == "deck" and self.last_gpu is not None:
            self.query_one(GpuPane).update_view(self.last_gpu, self.gpu_history.trends())
        elif pane_id == "procs":
            self.procs.refresh()
        elif pane_id == "plan":
            self.handoff.show_plan()
        elif pane_id == "health":
            self.hardware.show()

    # --- overview -----------------------------------------------------------------
    @console_worker("overview", pane="overview", what="read the host overview")
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
                self.post_message(messages.HostFailed(str(error)))
                wait_s = HOST_RETRY_S
            else:
                self._overview = overview
                self.post_message(messages.OverviewReady(overview))
                wait_s = self.overview_interval_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._overview_wake.wait(), wait_s)

    @while_open
    def on_servedeck_app_overview_ready(self, message: messages.OverviewReady) -> None:
        self.sources.host_reached()
        self.query_one(HeaderBar).connection_detail = message.overview.hostname
        self._last_good_overview = message.overview
        self.query_one(HostOverviewView).show_overview(message.overview)

    @while_open
    def on_servedeck_app_host_failed(self, message: messages.HostFailed) -> None:
        host = self.sources.health
        was_failing = host["host"].failing
        self.sources.set("host", message.message, self.sources.host_retry_in_s())
        reason = host["host"].reason
        view = self.query_one(HostOverviewView)
        if self._last_good_overview is not None:  # keep what is known; say how old it is
            view.show_overview(self._last_good_overview, host["host"].describe())
        else:
            view.show_error(reason)
        if not was_failing:  # one toast per outage; each retry shows only in the header
            self.notify(reason, title="Host unreachable", severity="error", timeout=8)

    def poll_later(self, delay_s: float, poll: Callable[[], object], name: str) -> None:
        """Arm the next run of a poll, replacing a pending one of the same name.

        Polls also run on demand (after a service action, on a tab switch); without the
        replacement each such run would start a second timer chain that polls forever.
        """
        pending = self._poll_timers.pop(name, None)
        if pending is not None:
            pending.stop()
        self._poll_timers[name] = set_sure_timer(self, delay_s, poll, name=name)

    # --- GPUs ---------------------------------------------------------------------
    @console_worker("gpu", pane="gpu", what="sample the GPUs")
    async def _poll_gpus(self) -> None:
        # One long-lived loop: a timer, a worker and a message per tick would cost
        # more main-thread time than drawing the tick.
        while not console_closing(self):
            try:
                source = await self.deck.gpu_source()
                snapshot = await source.sample()
            except ServedeckError as error:
                snapshot = GpuBoxSnapshot("none", time.time(), available=False, error=str(error))
                self.sources.set("gpu", str(error), self.profile.gpu.refresh_s)
            else:
                if snapshot.available:
                    self.sources.ok("gpu")
                elif self._last_good_gpu is not None:
                    reason = snapshot.error or "no GPUs"
                    self.sources.set("gpu", reason, self.profile.gpu.refresh_s)
            self.show_gpus(snapshot)
            await asyncio.sleep(self.profile.gpu.refresh_s)

    def show_gpus(self, snapshot: GpuBoxSnapshot) -> None:
        if console_closing(self):
            return
        if snapshot.available:
            self._last_good_gpu = snapshot
        elif self._last_good_gpu is not None:
            # The source failed: keep the last good sample on screen; the note gives its age.
            return
        self.last_gpu = snapshot
        self.record.gpu(snapshot)
        self.hardware.watch(snapshot)
        self.gpu_history.add(snapshot)
        if snapshot.available:
            used_bytes, _ = total_memory_bytes(snapshot.samples)
            self.tracker.observe_memory(used_bytes, snapshot.taken_at_s)
        if self.tab_visible("deck"):
            self._gpu_pane.update_view(snapshot, self.gpu_history.trends())

    # --- service, log, load, readiness, metrics ---------------------------------------
    @console_worker("service", pane="service", what="read the service state")
    async def _poll_service(self) -> None:
        controller = self.deck.service()
        if controller is None:
            hint = short_setup_hint(self.profile) or _NO_UNIT
            self.post_message(messages.ServiceUpdate(None, hint))
            return
        try:
            self.post_message(messages.ServiceUpdate(await controller.state()))
        except ServedeckError as error:
            self.post_message(messages.ServiceUpdate(None, str(error)))

    @while_open
    def on_servedeck_app_service_update(self, message: messages.ServiceUpdate) -> None:
        unreachable = (
            self.sources.health["host"].failing
            or getattr(self.deck.host, "connected", True) is False
        )
        if message.state is None and unreachable and self.deck.service() is not None:
            # Unknown, not stopped: keep no guessed state, offer no action until it is read.
            # (No unit: nothing is read from the host, so the host's state changes nothing.)
            self.sources.set("service", message.error or "unknown", SERVICE_POLL_S)
        elif message.state is not None:
            self.sources.ok("service")
            self.sources.host_reached()
            self._load_as_of = None  # read over the connection now: the strip counts again
        previous = self.unit_state
        self.unit_state = message.state
        self.record.unit(message.state, message.error)
        state = message.state
        self.tracker.observe_unit(None if state is None else state.is_active)
        if (
            state is not None
            and previous is not None
            and previous.is_active
            and not state.is_active
        ):
            self.ready = False
            self.metrics = None
            self.tracker.observe_exit(None, time.time())
            self.procs.refresh()
        self.restart_watch.observe(state=state)
        self._service_error = message.error  # kept: other redraws of the line say it too
        self.render_service_line(message.error)
        if previous is None or state is None or previous.is_active != state.is_active:
            self.refresh_bindings()  # Start or Stop: the footer offers what can be done now
        self._update_load()
        now_s = time.monotonic()
        if previous is None or state is None or _unit_moved(previous, state):
            self._service_changed_s = now_s
        self._service_read_s, self._service_read_phase = now_s, self.tracker.phase
        if message.state is not None or self.deck.service() is not None:
            self.poll_later(SERVICE_POLL_S, self._service_tick, "service-poll")

    def _service_tick(self) -> None:
        """Read the unit now if it may have changed, else look again in a second."""
        if self._service_read_due(time.monotonic()):
            self._poll_service()
        else:
            self.poll_later(SERVICE_POLL_S, self._service_tick, "service-poll")

    def _service_read_due(self, now_s: float) -> bool:
        controller = self.deck.service()
        state = self.unit_state
        if (
            controller is None
            or state is None
            # A state read that starts no command (the simulator's unit) costs nothing.
            or not getattr(controller, "state_costs_a_command", True)
            or state.active_state not in _SETTLED_STATES
            or now_s - self._service_changed_s < SERVICE_SETTLE_S
            or now_s - self._service_read_s >= SERVICE_SETTLED_POLL_S
            or self.tracker.phase != self._service_read_phase  # a start, stop or crash logged
        ):
            return True
        main_pid = state.main_pid if state.is_active else None
        return bool(main_pid) and self.deck.host.is_local and not _pid_alive(main_pid or 0)

    def render_service_line(self, error: str | None = None) -> None:
        error = error if error is not None else self._service_error
        if self.unit_state is None and self.sources.service_unknown_since_s is not None:
            error = unknown_since_text(self.sources.service_unknown_since_s)
        listing = self.procs.listing
        note = None if listing is None else leftovers_note(listing.processes)
        self.query_one(ServiceLine).show(
            self.unit_state,
            self.deck.host_label,
            self.ready,
            error=error,
            leftovers=note,
            progress=self.engine_progress.verdict if self.ready else None,
            asleep=self.asleep,
            sleep_level=self.sleep.level,
        )

    @console_worker("log", pane="log", what="follow the service log")
    async def _follow_log(self) -> None:
        source = self.deck.log_batches(initial_lines=2000, follow=True)
        if source is None:
            hint = setup_hint(self.profile) or (
                "no log source: set service.unit or service.log_file",
            )
            self.query_one(LogPane).add_lines([LogLine(text) for text in hint])
            return
        try:
            async for batch in source:  # a read at a time: one step per read, not per line
                while (  # memory stays bounded: the source waits for the drain
                    self._incoming_lines
                    and len(self._incoming_lines) + len(batch) > LOG_BACKLOG_LINES
                ):
                    await asyncio.sleep(LOG_DRAIN_S / 20)
                self._incoming_lines.add(batch)
                self._schedule_drain()
        except ServedeckError as error:
            if not self.sources.health["log"].failing:  # once per outage; the note counts down
                failed = redact_text(f"servedeck: log source failed: {error}")
                self._incoming_lines.append(LogLine(failed))
            self.sources.set("log", str(error), RETRY_S)
            self.poll_later(RETRY_S, self._follow_log, "log-retry")

    def _schedule_drain(self) -> None:
        """Drain LOG_DRAIN_S after the first line (a trickle is drawn in one go), or at once
        when a drain's worth is waiting: in a flood, waiting gathers nothing more."""
        soon = len(self._incoming_lines) >= LOG_DRAIN_LINES
        if self._drain_timer is not None:
            if self._drain_soon or not soon:
                return
            self._drain_timer.stop()
        self._drain_soon = soon
        delay_s = 0.001 if soon else LOG_DRAIN_S
        self._drain_timer = set_sure_timer(self, delay_s, self._drain_log_lines, name="log-drain")

    def _drain_log_lines(self) -> None:
        self._drain_timer = None
        if console_closing(self):  # a timer may fire while the app shuts down
            return
        batches = self._incoming_lines.take(LOG_DRAIN_LINES)
        if self._incoming_lines:  # a flood: the rest after the loop has run once more
            self._drain_soon = True
            self._drain_timer = set_sure_timer(self, 0.001, self._drain_log_lines, name="log-drain")
        if batches:
            self.sources.ok("log")
            self._load_as_of = None  # new lines: the strip is of now again
        if batches and not self.deck.host.is_local:
            self.sources.host_reached()  # lines arrive: the host answers again
        pane = self.query_one(LogPane)
        for batch in batches:  # as they were read (a LineBatch keeps its columns)
            self.tracker.feed_many(batch)
            self.engine_progress.feed_log(texts_of(batch))
            self.record.lines(batch)
            self.restart_watch.observe(lines=batch)
            pane.add_lines(batch)
        self._update_load()

    def _freeze_load(self) -> None:
        """The connection was cut: the strip keeps the load as of now, marked, not counting."""
        if self._load_as_of is None and not self.deck.host.is_local:
            self._load_as_of = self.tracker.snapshot()
            self._update_load()

    def _tick_load_clock(self) -> None:
        """While a load runs, its clocks (elapsed, ETA) move: redraw once a second."""
        self._clock_scheduled = False
        if not console_closing(self):
            self._update_load()

    def _unit_active(self) -> bool | None:
        return self.unit_state.is_active if self.unit_state is not None else None

    def _update_load(self) -> None:
        self.progress = self.tracker.snapshot()
        self.record.progress(self.progress)
        if self.ready and self.progress.phase in (Phase.STOPPED, Phase.FAILED):
            self.ready = False  # the log says it stopped: readiness ends now, not at a poll
            self.metrics = None
            self.render_service_line()
        unit_active = self._unit_active()
        waiting_for_http = not self.ready and ReadinessProbe.should_poll(self.progress, unit_active)
        loading = self.progress.phase in LOADING_PHASES
        if (loading or waiting_for_http) and not self._clock_scheduled:
            self._clock_scheduled = True
            set_sure_timer(self, 1.0, self._tick_load_clock, name="load-clock")
        now_s = time.monotonic()
        ready = self.ready_clock.update(self.progress)  # also records a load that reached serving
        self.load_live.watch_if_loading()
        ready = None if self.ready else ready
        frozen = self._load_as_of
        shown = (self.progress.phase, self.progress.shards_done, self.metrics, frozen)
        # Redraw on a visible change at once, otherwise once a second for the clocks.
        if self.tab_visible("deck") and (
            shown != self._strip_shown or now_s - self._strip_at_s >= 1.0
        ):
            self._strip_shown, self._strip_at_s = shown, now_s
            unknown = self.sources.service_unknown_since_s
            self.query_one(LoadStrip).show(
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
            self._probe_readiness()

    @console_worker("readiness", pane="readiness", what="probe the server's readiness")
    async def _probe_readiness(self) -> None:
        url = await self.deck.reachable_base_url()
        probe = ReadinessProbe(url, api_key=self.deck.api_key)
        readiness = await probe.check(self.progress, client=self._http_client())
        self.post_message(messages.ReadinessUpdate(readiness))

    @while_open
    def on_servedeck_app_readiness_update(self, message: messages.ReadinessUpdate) -> None:
        self.sources.ok("readiness")
        if message.readiness.epoch != self.tracker.epoch or self._unit_active() is False:
            return  # asked before a stop (or a new start): it speaks of a server now gone
        self.record.readiness(message.readiness)
        self.sleep.observe(message.readiness)
        if bool(message.readiness.asleep) != self.asleep:  # never "ready" nor "idle" asleep
            self.asleep = bool(message.readiness.asleep)
            self.render_service_line()
        if message.readiness.ready and not self.ready:
            self.ready = True
            models = ", ".join(message.readiness.models)
            self.notify(
                f"{self.profile.service.unit or 'service'} is ready: {models}", title="Ready"
            )
            self.bell()
            self.render_service_line()
            self._poll_metrics()
            self.load_live.explain_after_ready()

    @console_worker("metrics", pane="metrics", what="read the server's metrics")
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
        except ServedeckError as error:
            self.post_message(messages.MetricsUpdate(None, str(error)))
        else:
            self.post_message(messages.MetricsUpdate(metrics))
            main_pid = self.unit_state.main_pid if self.unit_state else None
            verdict = await self.engine_progress.observe(
                self.deck.host, main_pid, metrics, self.last_gpu
            )
            self.post_message(messages.ProgressUpdate(verdict))

    @while_open
    def on_servedeck_app_progress_update(self, message: messages.ProgressUpdate) -> None:
        """The engine's progress verdict: on the service line; a stall is an incident."""
        recording = self.record.recording
        feed, monitor = (recording.feed, recording.monitor) if recording else (None, None)
        if self.stall_incidents.note(message.verdict, feed, monitor) == "entered":
            self.notify(message.verdict.headline(), title="Engine stalled", severity="error")
        self.render_service_line()

    @while_open
    def on_servedeck_app_metrics_update(self, message: messages.MetricsUpdate) -> None:
        if not self.ready:
            return  # asked while ready, answered after a stop: the server it read is gone
        self.record.metrics(message.metrics)
        if message.metrics is not None:
            self.metrics = message.metrics
            self.sources.ok("metrics")
            self._update_load()
        elif self.ready:  # the last metrics stay on screen; the note gives their age
            self.sources.set("metrics", message.error or "no answer", METRICS_POLL_S)
        if self.ready:
            self.poll_later(METRICS_POLL_S, self._poll_metrics, "metrics-poll")

    def _http_client(self) -> httpx.AsyncClient:
        """One client for every poll: a new one per request costs ~25 ms of TLS setup."""
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(timeout=httpx.Timeout(3.0, connect=2.0))
        return self._http

    # --- service actions ------------------------------------------------------------
    def action_service(self, verb: str) -> None:
        controller = self.deck.service()
        if controller is None:
            self.notify("This profile names no systemd unit.", severity="warning")
            return
        if self.unit_state is None and self.sources.service_unknown_since_s is not None:
            since = unknown_since_text(self.sources.service_unknown_since_s)
            self.notify(
                f"The service state is {since}: {verb} was not attempted.",
                title="Service",
                severity="warning",
            )
            append_audit(
                "service.refused",
                self.deck.host_label,
                {"unit": self.profile.service.unit, "action": verb, "reason": f"state {since}"},
            )
            return
        if self.profile.read_only:
            audit_refusal(controller.describe(verb), "read-only mode")  # type: ignore[attr-defined]
            self.notify(f"Read-only: {verb} is disabled.", severity="warning")
            return
        note = ""
        if verb in ("stop", "restart") and self.profile.service.engine == "vllm":
            note = "vLLM workers may survive the stop and hold GPU memory: check Processes (3)."
        action = controller.describe(verb)  # type: ignore[attr-defined]

        def confirmed(answer: bool | None) -> None:
            if answer:
                self._run_service_action(verb)

        def ask() -> None:
            self.push_screen(ConfirmActionScreen(action, note), confirmed)

        # start/restart: the guard first (leftovers holding GPU memory or the port).
        self.restart_watch.guard_then_confirm(verb, ask)

    def action_sleep_mode(self, verb: str) -> None:
        self.sleep.act(verb)

    @while_open
    def on_servedeck_app_sleep_done(self, message: messages.SleepDone) -> None:
        self.sleep.done(message)
        self.ready = False  # asleep is never ready; awake, the probe says ready again
        self._last_probe_s = 0.0
        self._probe_readiness()

    @console_worker(
        "service-action",
        pane="service-action",
        what=lambda app, verb: f"{verb} {app.profile.service.unit} on {app.deck.host_label}",
        user_action=True,
    )
    async def _run_service_action(self, verb: str) -> None:
        controller = self.deck.service()
        assert controller is not None
        try:
            outcome = await getattr(controller, verb)(confirmed=True)
        except ServedeckError as error:
            self.post_message(messages.ActionDone(verb, None, str(error)))
        else:
            self.post_message(messages.ActionDone(verb, outcome))

    @while_open
    def on_servedeck_app_action_done(self, message: messages.ActionDone) -> None:
        if message.error or message.outcome is None or not message.outcome.ok:
            detail = message.error or (message.outcome.message if message.outcome else "")
            unit = self.profile.service.unit or "the service"
            self.notify(
                f"Tried to {message.verb} {unit} on {self.deck.host_label}; it failed: "
                f"{failure_text(detail)}. Nothing else was done.",
                title="Action failed",
                severity="error",
                timeout=10,
            )
        else:
            self.notify(f"{message.verb}: {message.outcome.message}", title="Service")
        if message.verb in ("start", "restart"):
            self.ready = False
            self.metrics = None
        self._service_changed_s = time.monotonic()  # read it every second while it settles
        self._poll_service()

    def action_refresh(self) -> None:
        # Said at once: the overview and process list may take seconds over SSH.
        self.notify("refreshing the host overview and processes...", title="Refresh", timeout=3)
        self.query_one(HeaderBar).connection_state = "connecting"
        self._read_whole_host()  # asked for: the whole overview again, not only its numbers
        self.procs.refresh()

    def _read_whole_host(self) -> None:
        """The overview reads the whole host again now (asked for, or a new boot)."""
        self._full_overview_due = True
        self._overview_wake.set()

    # --- the parts' messages and keys: each handled by its part --------------------------
    @while_open
    def on_servedeck_app_procs_update(self, message: messages.ProcsUpdate) -> None:
        self.procs.show_listing(message)

    @while_open
    def on_servedeck_app_kill_done(self, message: messages.KillDone) -> None:
        self.procs.kill_done(message)

    def action_kill_leftovers(self) -> None:
        self.procs.kill_leftovers()

    def action_kill_selected(self) -> None:
        self.procs.kill_selected()

    @while_open
    def on_servedeck_app_bench_event(self, message: messages.BenchEvent) -> None:
        self.bench.show_event(message)

    def action_bench(self, preset_name: str | None = None) -> None:
        self.bench.run(preset_name)

    def action_bench_pick(self) -> None:
        self.bench.pick()

    def action_bench_cancel(self) -> None:
        self.bench.cancel()

    def action_bench_capacity(self) -> None:
        self.bench.capacity()

    @while_open
    def on_servedeck_app_hardware_counters(self, message: messages.HardwareCounters) -> None:
        self.hardware.counters_read(message)

    @while_open
    def on_servedeck_app_xid_seen(self, message: messages.XidSeen) -> None:
        self.hardware.xid_seen(message)

    @while_open
    def on_servedeck_app_kernel_log_state(self, message: messages.KernelLogState) -> None:
        self.hardware.kernel_log_state(message)

    @while_open
    def on_servedeck_app_health_ready(self, message: messages.HealthReady) -> None:
        self.hardware.health_read(message)

    @while_open
    def on_servedeck_app_probe_checked(self, message: messages.ProbeChecked) -> None:
        self.hardware.probe_checked(message)

    @while_open
    def on_servedeck_app_probe_done(self, message: messages.ProbeDone) -> None:
        self.hardware.probe_done(message)

    def action_probe(self) -> None:
        self.hardware.probe()

    @while_open
    def on_servedeck_app_plan_ready(self, message: messages.PlanReady) -> None:
        self.handoff.plan_ready(message)

    def action_summary(self) -> None:
        self.handoff.preview_summary()

    def action_export_summary(self) -> None:
        self.handoff.export_summary()

    @while_open
    def on_servedeck_app_load_live_update(self, message: messages.LoadLiveUpdate) -> None:
        self.load_live.show(message)

    def action_timeline(self) -> None:
        self.record.show_timeline()

    def action_alerts(self) -> None:
        self.record.show_alerts()

    @while_open
    def on_worker_failed(self, message: WorkerFailed) -> None:
        """A worker raised: a state on its pane (and a toast when asked for), polls restart."""
        self.sources.worker_failed(message)
        restart = self._restarts().get(message.pane)
        if restart is not None:
            self.poll_later(POLL_RESTART_S, restart, f"{message.pane}-restart")
        if message.pane == "readiness":
            self._last_probe_s = time.monotonic()  # the next tick of the load clock retries
        elif message.pane == "plan":
            self.handoff.plan_failed(message.reason)
        elif message.pane == "bench":
            self.bench.failed(message.reason)
        elif message.pane == "service-action":
            self._poll_service()  # show what the service is now, whatever the action did

    def _restarts(self) -> dict[str, Callable[[], object]]:
        """Polls that restart by themselves after an unexpected failure."""
        return {
            "overview": self._poll_overview,
            "gpu": self._poll_gpus,
            "service": self._poll_service,
            "log": self._follow_log,
            "metrics": self._poll_metrics,
            "procs": self.procs.refresh_if_shown,
        }

    # --- general --------------------------------------------------------------------
    def on_notify(self, event: Notify) -> None:
        """Arm a sweep at the toast's deadline: a toast outlives its timeout on no pane."""
        self.set_timer(event.notification.timeout + 0.5, self._expire_toasts, name="toast-sweep")

    def _expire_toasts(self) -> None:
        expired = [note for note in self._notifications if note.has_expired]
        for note in expired:
            self._unnotify(note, refresh=False)
        if expired:
            self._refresh_notifications()

    def action_help(self) -> None:
        scopes = help_scopes(self._tabs.active, getattr(self.screen, "KEY_SCOPE", None))
        self.push_screen(HelpScreen(COMMANDS, self._effective_keys(), extra=FORMULAS, here=scopes))

    def on_key(self, event: events.Key) -> None:
        """A key that would change the host or load its server, pressed read-only: say no, audit it.

        Read-only hides those keys, so Textual ignores the press; a browser visitor who
        presses X or b anyway sees why nothing happened, and the audit log keeps the attempt.
        """
        if not self.profile.read_only:
            return
        keymap = dict(self.profile.keys)
        for command in commands_in("app"):
            keys = keymap.get(command.binding_id, command.key).split(",")
            if event.key not in (key.strip() for key in keys):
                continue
            _namespace, name, _parameters = parse_action(command.action)
            if refused_read_only(name):
                self.refuse_read_only(event.key, command.label, command.action)
            return

    def refuse_read_only(self, key: str, label: str, action: str) -> None:
        self.notify(
            f"Read-only console: {label} ({key}) is refused.",
            title="Read-only",
            severity="warning",
        )
        append_audit(
            "console.refused",
            self.deck.host_label,
            {"pressed": key, "action": action, "reason": "read-only mode"},
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer only what can be done now: the footer and the keys follow the service state."""
        if self.record.replay_refuses(action) or super().check_action(action, parameters) is False:
            return False
        state, listing = self.unit_state, self.procs.listing
        return action_offered(
            action,
            parameters,
            read_only=self.profile.read_only,
            has_unit=bool(self.profile.service.unit),
            active=None if state is None else state.is_active,
            leftovers=None if listing is None else len(leftovers(listing.processes)),
            tab=self.active_tab(),
            bench_running=self.bench.process is not None,
            asleep=self.sleep.asleep,
        )

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
        return effective_keys(self.profile.keys)

    def action_show_tab(self, tab_id: str) -> None:
        self.query_one(TabbedContent).active = tab_id

    def active_tab(self) -> str | None:
        """The pane whose tab is active (None before the first frame)."""
        return self._tabs.active if hasattr(self, "_tabs") else None

    def _focus_pane(self, tab_id: str) -> None:
        """Focus follows the pane on screen: its keys work without Tab and show in the footer."""
        target = focus_target(tab_id)
        if target is not None and not isinstance(self.screen, ModalScreen):
            with contextlib.suppress(NoMatches):  # the pane may still be mounting
                self.query_one(target).focus()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        builtin = list(super().get_system_commands(screen))
        yield from builtin
        taken = {command.title for command in builtin}  # Textual's own Quit: not a second one
        for command in commands_in("app"):
            if command.action == "command_palette" or command.label in taken:
                continue
            _namespace, name, parameters = parse_action(command.action)
            if self.check_action(name, parameters) is False:
                continue
            yield SystemCommand(
                command.label, command.help, lambda action=command.action: self.run_action(action)
            )
        if self.profile.read_only:  # a benchmark loads the server: no preset to run either
            return
        for name, preset in self.profile.benchmark.presets.items():
            yield SystemCommand(
                f"Bench preset {name}",
                f"Run the {name!r} benchmark preset ({counted(preset.output_tokens, 'output token')})",
                lambda name=name: self.action_bench(name),
            )

    async def on_unmount(self) -> None:
        await self._let_workers_finish()
        if self._http is not None:
            await self._http.aclose()
        if self.bench.process is not None:
            await self.bench.process.kill()
        await self.deck.close()
        self.record.stop()
        gc.unfreeze()  # a process that opens consoles again (tests) must free this one
        if self._gc_thresholds is not None:
            gc.set_threshold(*self._gc_thresholds)


def _unit_moved(previous: UnitState, state: UnitState) -> bool:
    return (previous.active_state, previous.main_pid) != (state.active_state, state.main_pid)


def _pid_alive(pid: int) -> bool:
    """Whether a process of this machine lives (a stat of /proc, no command)."""
    return os.path.exists(f"/proc/{pid}")
