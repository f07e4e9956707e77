"""The servedeck console: wires a Deck's sources to widgets through workers and messages.

Workers run the sources and post Messages; message handlers own the UI (Textual's
thread-safety rule). Every poll is re-armed only after the previous one finished,
and panes nobody is looking at are not redrawn. Each pane's polls and state live in a
part (tui/app/console_*.py); the App composes the panes, routes tabs, and hands each
message to its part in one line; each key's action does the same (console_actions.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.driver import Driver
from textual.notifications import Notify
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static, TabbedContent
from textual.worker import Worker

from tui.app import messages
from tui.app.console_actions import ConsoleActions
from tui.app.console_bench import BenchPart
from tui.app.console_gpus import GpusPart
from tui.app.console_guard import console_closing, while_open
from tui.app.console_handoff import HandoffPart
from tui.app.console_hardware import HardwarePart
from tui.app.console_health import SourceHealthPart
from tui.app.console_keys import KeysPart
from tui.app.console_layout import compose_panes
from tui.app.console_lifecycle import CollectorTuning, let_workers_finish
from tui.app.console_load_live import LoadLivePart
from tui.app.console_log import LogPart
from tui.app.console_overview import OverviewPart
from tui.app.console_processes import ProcessesPart
from tui.app.console_record import RecordPart
from tui.app.console_recovery import RecoveryPart
from tui.app.console_restart_watch import RestartWatchPart
from tui.app.console_service import ServicePart
from tui.app.console_serving import ServingPart
from tui.app.console_sleep import SleepPart
from tui.app.console_stacks import StacksPart
from tui.app.console_tabs import TabsPart
from tui.app.console_tune import TunePart
from tui.app.console_workers import WorkerFailed
from tui.core.config import Profile
from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot
from tui.hints import short_setup_hint
from tui.offered import action_offered
from tui.procs.kill import leftovers
from tui.screens.cropped_screen import CroppedScreen
from tui.serving.load.tracker import LoadProgress, LoadTracker
from tui.serving.unit.service import UnitState
from widgets.keys import bindings_for
from widgets.sure_timer import set_sure_timer


class ServedeckApp(ConsoleActions, App[int]):
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
        self.recovery = RecoveryPart(
            deck,
            self,
            self.sources,
            restarts={
                "overview": self.overview.poll,
                "gpu": self.gpus.poll,
                "service": self.service.poll,
                "log": self.logs.follow,
                "metrics": self.serving.poll_metrics,
                "procs": self.procs.refresh_if_shown,
            },
            told={
                "readiness": lambda _: self.serving.probe_failed(),  # the load clock retries
                "plan": self.handoff.plan_failed,
                "bench": self.bench.failed,
                "service-action": lambda _: self.service.poll(),  # what the service is now
            },
        )
        self.tabs = TabsPart(
            deck,
            self,
            on_shown={
                "deck": self.gpus.redraw,
                "overview": self.overview.redraw,
                "procs": self.procs.refresh,
                "plan": self.handoff.show_plan,
                "health": self.hardware.show,
            },
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
        yield from compose_panes(self.profile, browser=self.is_web)

    def on_mount(self) -> None:
        self.tabs.mount()
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
        return self.tabs.visible(tab_id)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.tabs.activated(event.pane.id or "")

    def poll_later(self, delay_s: float, poll: Callable[[], object], name: str) -> None:
        """Arm the next run of a poll, replacing a pending one of the same name.

        Polls also run on demand (after a service action, on a tab switch); without the
        replacement each such run would start a second timer chain that polls forever.
        """
        pending = self._poll_timers.pop(name, None)
        if pending is not None:
            pending.stop()
        self._poll_timers[name] = set_sure_timer(self, delay_s, poll, name=name)

    # --- the core panes' messages: each handled by its part ---------------------------
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

    @while_open
    def on_servedeck_app_sleep_done(self, message: messages.SleepDone) -> None:
        self.sleep.done(message)
        self.serving.sleep_done()

    @while_open
    def on_servedeck_app_action_done(self, message: messages.ActionDone) -> None:
        self.service.action_done(message)

    # --- the parts' messages: each handled by its part ---------------------------------
    @while_open
    def on_servedeck_app_procs_update(self, message: messages.ProcsUpdate) -> None:
        self.procs.show_listing(message)

    @while_open
    def on_servedeck_app_kill_done(self, message: messages.KillDone) -> None:
        self.procs.kill_done(message)

    @while_open
    def on_servedeck_app_bench_event(self, message: messages.BenchEvent) -> None:
        self.bench.show_event(message)

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

    @while_open
    def on_servedeck_app_plan_ready(self, message: messages.PlanReady) -> None:
        self.handoff.plan_ready(message)

    @while_open
    def on_servedeck_app_load_live_update(self, message: messages.LoadLiveUpdate) -> None:
        self.load_live.show(message)

    @while_open
    def on_servedeck_app_tune_update(self, message: messages.TuneUpdate) -> None:
        self.tune.show(message)

    @while_open
    def on_worker_failed(self, message: WorkerFailed) -> None:
        self.recovery.worker_failed(message)

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

    def active_tab(self) -> str | None:
        return self.tabs.active()

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
