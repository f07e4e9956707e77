"""The servedeck console: wires a Deck's sources to widgets through workers and messages.

Workers run the sources and post Messages; message handlers own the UI (Textual's
thread-safety rule). Every poll is re-armed only after the previous one finished,
and panes nobody is looking at are not redrawn. Each pane's polls and state live in a
part (tui/app/console_*.py); the App composes the panes, routes tabs and keys, and hands
each message to its part in one line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from textual import events
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
from tui.app.console_gpus import GpusPart
from tui.app.console_guard import console_closing, while_open
from tui.app.console_handoff import HandoffPart
from tui.app.console_hardware import HardwarePart
from tui.app.console_health import POLL_RESTART_S, SourceHealthPart
from tui.app.console_keys import KeysPart
from tui.app.console_lifecycle import CollectorTuning, let_workers_finish
from tui.app.console_load_live import LoadLivePart
from tui.app.console_log import LogPart
from tui.app.console_overview import OverviewPart
from tui.app.console_processes import ProcessesPart
from tui.app.console_record import RecordPart
from tui.app.console_restart_watch import RestartWatchPart
from tui.app.console_service import ServicePart
from tui.app.console_serving import ServingPart
from tui.app.console_sleep import SleepPart
from tui.app.console_stacks import StacksPart
from tui.app.console_tune import TunePart
from tui.app.console_workers import WorkerFailed
from tui.core.config import Profile
from tui.core.paths import demo_records_note
from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot
from tui.hints import short_setup_hint
from tui.offered import action_offered, focus_target
from tui.procs.kill import leftovers
from tui.screens.cropped_screen import CroppedScreen
from tui.screens.help import HelpScreen
from tui.screens.kill_confirm import KillConfirmScreen
from tui.serving.load.tracker import LoadProgress, LoadTracker
from tui.serving.unit.service import UnitState
from widgets.bench_view import BenchView
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


class ServedeckApp(App[int]):
    """One console for one profile's Deck, composed of parts (tui/app/console_*.py), each
    built with the Deck and this app as its Console."""

    CSS_PATH = "app.tcss"
    TITLE = "servedeck"
    BINDINGS = bindings_for("app")

    def __init__(self, profile: Profile, deck: Deck, overview_interval_s: float = 30.0) -> None:
        super().__init__()
        self.profile = profile
        self.deck = deck
        self.sub_title = profile.name
        self._collector = CollectorTuning()
        self._quitting = False
        self._poll_timers: dict[str, Timer] = {}
        # The parts: each owns its state and workers (tui/app/console_*.py).
        self.sources = SourceHealthPart(
            deck,
            self,
            on_cut=lambda: self.serving.freeze_load(),
            wake_overview=lambda: self.overview.wake(),
            gpu_seen=lambda: self.gpus.last_good is not None,
        )
        self.overview = OverviewPart(deck, self, self.sources, overview_interval_s)
        self.record = RecordPart(deck, self)
        self.procs = ProcessesPart(
            deck, self, self.sources, self.record, host_rebooted=self.overview.read_whole_host
        )
        self.hardware = HardwarePart(deck, self, self.sources, self.record)
        self.bench = BenchPart(deck, self)
        self.handoff = HandoffPart(deck, self)
        self.tune = TunePart(deck, self, self.record)
        self.load_live = LoadLivePart(deck, self, self.record)
        self.restart_watch = RestartWatchPart(deck, self, self.action_kill_leftovers)
        self.sleep = SleepPart(deck, self)
        self.serving = ServingPart(
            deck, self, self.sources, self.record, self.load_live, self.bench, self.sleep
        )
        self.stacks = StacksPart(deck, self, self.record, self.serving.stall_incidents)
        core = (self.sources, self.record)
        self.gpus = GpusPart(
            deck,
            self,
            *core,
            self.hardware,
            self.serving.tracker,
            first_sample=lambda: self.procs.refresh(),  # K offered only with leftovers
        )
        self.service = ServicePart(
            deck, self, *core, self.procs, self.restart_watch, self.serving, self.stacks
        )
        self.logs = LogPart(deck, self, *core, self.restart_watch, self.serving)
        self.keys = KeysPart(
            deck,
            self,
            offered=self.check_action,
            run_action=self.run_action,
            bench=self.action_bench,
        )

    # --- the core polls' state, as the Console protocol publishes it to the parts -----
    @property
    def last_gpu(self) -> GpuBoxSnapshot | None:
        return self.gpus.last

    @property
    def unit_state(self) -> UnitState | None:
        return self.service.unit_state

    @property
    def progress(self) -> LoadProgress | None:
        return self.serving.progress

    @property
    def ready(self) -> bool:
        return self.serving.ready

    @property
    def tracker(self) -> LoadTracker:
        return self.serving.tracker

    def get_default_screen(self) -> Screen:
        """The main screen, whose partial updates draw only the changed lines (perf)."""
        return CroppedScreen(id="_default")

    def get_driver_class(self) -> type[Driver]:
        """Textual's terminal driver, but one whose input thread does not poll while idle."""
        driver_class = super().get_driver_class()
        if driver_class.__name__ == "LinuxDriver" and driver_class.__module__.startswith(
            "textual."
        ):
            from tui.app.terminal_driver import QuietLinuxDriver  # a terminal's only

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
        if self.profile.keys:
            self.set_keymap(dict(self.profile.keys))
        self.overview.mount()
        self.serving.mount()
        if short_setup_hint(self.profile):  # the whole hint is in the log pane
            self.notify(f"{short_setup_hint(self.profile)}", title="Nothing to watch", timeout=15)
        self.query_one("#deck-note", Static).display = False
        # The first frame first: the sources load NVML, SQLite and httpx (~100 ms).
        self.call_after_refresh(self.call_later, self._start_sources)

    def _start_sources(self) -> None:
        if console_closing(self):
            return
        self._collector.start()
        self.record.start()
        self.overview.poll()
        self.gpus.poll()
        self.service.poll()
        self.logs.follow()
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
        if pane_id == "deck":
            self.gpus.redraw()
        elif pane_id == "procs":
            self.procs.refresh()
        elif pane_id == "plan":
            self.handoff.show_plan()
        elif pane_id == "health":
            self.hardware.show()

    def poll_later(self, delay_s: float, poll: Callable[[], object], name: str) -> None:
        """Arm the next run of a poll, replacing a pending one of the same name.

        Polls also run on demand (after a service action, on a tab switch); without the
        replacement each such run would start a second timer chain that polls forever.
        """
        pending = self._poll_timers.pop(name, None)
        if pending is not None:
            pending.stop()
        self._poll_timers[name] = set_sure_timer(self, delay_s, poll, name=name)

    # --- the core panes' messages and keys: each handled by its part ------------------
    @while_open
    def on_servedeck_app_overview_ready(self, message: messages.OverviewReady) -> None:
        self.overview.shown(message)

    @while_open
    def on_servedeck_app_host_failed(self, message: messages.HostFailed) -> None:
        self.overview.failed(message)

    def show_gpus(self, snapshot: GpuBoxSnapshot) -> None:
        self.gpus.show(snapshot)

    @while_open
    def on_servedeck_app_service_update(self, message: messages.ServiceUpdate) -> None:
        self.service.update(message)

    def render_service_line(self) -> None:
        self.service.render_line()

    @while_open
    def on_servedeck_app_readiness_update(self, message: messages.ReadinessUpdate) -> None:
        self.serving.readiness_update(message)

    @while_open
    def on_servedeck_app_progress_update(self, message: messages.ProgressUpdate) -> None:
        self.serving.progress_update(message, self.stacks.stall_toast)

    @while_open
    def on_servedeck_app_metrics_update(self, message: messages.MetricsUpdate) -> None:
        self.serving.metrics_update(message)

    def action_service(self, verb: str) -> None:
        self.service.act(verb)

    def action_sleep_mode(self, verb: str) -> None:
        self.sleep.act(verb)

    @while_open
    def on_servedeck_app_sleep_done(self, message: messages.SleepDone) -> None:
        self.sleep.done(message)
        self.serving.sleep_done()

    @while_open
    def on_servedeck_app_action_done(self, message: messages.ActionDone) -> None:
        self.service.action_done(message)

    def action_refresh(self) -> None:
        # Said at once: the overview and process list may take seconds over SSH.
        self.notify("refreshing the host overview and processes...", title="Refresh", timeout=3)
        self.query_one(HeaderBar).connection_state = "connecting"
        self.overview.read_whole_host()  # asked for: the whole overview again, not only its numbers
        self.procs.refresh()

    # --- the parts' messages and keys: each handled by its part --------------------------
    @while_open
    def on_servedeck_app_procs_update(self, message: messages.ProcsUpdate) -> None:
        self.procs.show_listing(message)

    @while_open
    def on_servedeck_app_kill_done(self, message: messages.KillDone) -> None:
        self.procs.kill_done(message)

    def action_stacks(self) -> None:
        self.stacks.dump()

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

    def action_tune(self) -> None:
        self.tune.open()

    @while_open
    def on_servedeck_app_tune_update(self, message: messages.TuneUpdate) -> None:
        self.tune.show(message)

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
            self.serving.probe_failed()  # the next tick of the load clock retries
        elif message.pane == "plan":
            self.handoff.plan_failed(message.reason)
        elif message.pane == "bench":
            self.bench.failed(message.reason)
        elif message.pane == "service-action":
            self.service.poll()  # show what the service is now, whatever the action did

    def _restarts(self) -> dict[str, Callable[[], object]]:
        """Polls that restart by themselves after an unexpected failure."""
        return {
            "overview": self.overview.poll,
            "gpu": self.gpus.poll,
            "service": self.service.poll,
            "log": self.logs.follow,
            "metrics": self.serving.poll_metrics,
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
        self.keys.help()

    def on_key(self, event: events.Key) -> None:
        self.keys.pressed(event.key)

    def refuse_read_only(self, key: str, label: str, action: str) -> None:
        self.keys.refuse_read_only(key, label, action)

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
        return self.keys.palette(list(super().get_system_commands(screen)))

    async def on_unmount(self) -> None:
        self._quitting = True
        await self.tune.close()
        self.workers.cancel_all()
        await let_workers_finish(self.workers)
        await self.serving.close()
        if self.bench.process is not None:
            await self.bench.process.kill()
        await self.deck.close()
        self.record.stop()
        self._collector.stop()
