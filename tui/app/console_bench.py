"""The console's Bench pane: run a preset in its own process, draw its events, keep the history.

A part of ServedeckApp: it owns the running benchmark's process (c cancels it, quitting
kills it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tui.app import messages
from tui.app.console_protocol import Console, Part
from tui.app.console_workers import console_worker, failure_text
from tui.bench.best import COMPLETE, NO_EARLIER, earlier_alike, result_toast, run_state
from tui.bench.history import append_result, runs_for_host
from tui.bench.model import BenchResult
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.screens.preset_picker import PresetPickerScreen
from widgets.bench_view import BenchView

if TYPE_CHECKING:  # the runners load at the first run (B, the capacity key): not at start
    from tui.bench.capacity.driver import CapacityProcess, GpuRecorder
    from tui.bench.driver import BenchProcess
    from tui.deck import Deck


class BenchPart(Part):
    """The Bench pane: one benchmark or capacity search at a time, its events, the history."""

    def __init__(self, deck: Deck, console: Console) -> None:
        super().__init__(deck, console)
        self.process: BenchProcess | CapacityProcess | None = None  # the run now, if any
        # The run now sends its warm-up (awaited, never measured): a cold first request may
        # take longer than the stall limit with no token, and that is no stall.
        self.warming_up = False

    def _read_only_refuses(self, action: str, label: str) -> bool:
        """Reached read-only without a key (the palette): refused and audited all the same."""
        if not self.profile.read_only:
            return False
        self.console.refuse_read_only("palette", label, action)
        return True

    def _view(self) -> BenchView:
        return self.console.query_one(BenchView)

    def show_history(self) -> None:
        self._view().show_history(runs_for_host(self.deck.host_label))

    def failed(self, reason: str) -> None:
        """Its worker raised: the pane says why."""
        self._view().show_error(reason)

    def run(self, preset_name: str | None = None) -> None:
        if self._read_only_refuses("bench", "Bench"):
            return
        if self.process is not None:
            self.console.notify(
                "A benchmark is already running (c cancels it).", severity="warning"
            )
            return
        if self._service_stopped():
            return
        name = preset_name or self.profile.benchmark.default_preset
        self.console.action_show_tab("bench")
        self._run_bench(name)

    def pick(self) -> None:
        if self._read_only_refuses("bench_pick", "Presets"):
            return
        presets = self.profile.benchmark.presets

        def picked(name: str | None) -> None:
            if name:
                self.run(name)

        self.console.push_screen(
            PresetPickerScreen(presets, self.profile.benchmark.default_preset), picked
        )

    def cancel(self) -> None:
        if self.process is not None:
            self.process.cancel()
            self.console.notify("Cancelling the benchmark; partial results are kept.")
        else:
            self.console.notify("No benchmark is running.", title="Bench", timeout=3)

    def _service_stopped(self) -> bool:
        """A stopped unit has nobody to answer: say so instead of a connection error."""
        state = self.console.unit_state
        if self.profile.service.unit and state is not None and not state.is_active:
            self.console.notify(
                f"The service {self.profile.service.unit} is {state.active_state}: nothing to "
                "benchmark (S starts it).",
                title="Bench",
                severity="warning",
            )
            return True
        return False

    def capacity(self) -> None:
        if self._read_only_refuses("bench_capacity", "Capacity"):
            return
        if self.process is not None:
            self.console.notify(
                "A benchmark is already running (c cancels it).", severity="warning"
            )
            return
        if self._service_stopped():
            return
        self.console.action_show_tab("bench")
        self._run_capacity()

    @console_worker("bench", pane="bench", what="run the capacity search", user_action=True)
    async def _run_capacity(self) -> None:
        """The capacity search on the default preset's workload, GPUs sampled per level."""
        from tui.bench.capacity.driver import CapacityProcess, GpuRecorder
        from tui.bench.capacity.spec import CapacitySpec
        from tui.bench.context import context_for_profile
        from tui.bench.workload import spec_from_preset
        from tui.commands.capacity_cmd import slo_from_profile

        benchmark = self.profile.benchmark
        recorder: GpuRecorder | None = None
        try:
            url = await self.deck.reachable_base_url()
            context = replace(context_for_profile(self.profile), host=self.deck.host_label)
            bench = spec_from_preset(
                benchmark.presets[benchmark.default_preset], url, warmup_requests=0,
                api_key_env=self.profile.service.api_key_env,
                context=replace(context, base_url=url),
            )  # fmt: skip
            process = CapacityProcess(CapacitySpec(bench, slo=slo_from_profile(benchmark.slo)))
            self.process = process  # cancel/kill alike
            self.console.refresh_bindings()
            recorder = GpuRecorder(await self.deck.gpu_source())
            async for event in process.events():
                recorder.on_event(event)
                if event.get("event") == "result":
                    event = {**event, "result": recorder.annotate(event["result"])}
                self.post_message(messages.BenchEvent(event))
        except ServedeckError as error:
            self.post_message(messages.BenchEvent({"event": "error", "message": str(error)}))
        finally:
            if recorder is not None:
                recorder.close()
            self.process = None
            self.console.refresh_bindings()

    def _show_comparison(self, view: BenchView, newest: BenchResult) -> None:
        """The newest run against the last complete run of its workload on its configuration."""
        from textual.widgets import Static

        from tui.bench.compare import compare_runs, format_comparison

        runs = runs_for_host(self.deck.host_label, limit=200)
        previous = earlier_alike(runs, newest)
        if run_state(newest) != COMPLETE:
            text = f"Not compared: this run is {run_state(newest)} (not a measurement)."
        elif previous is None:
            text = f"Not compared: {NO_EARLIER}."
        else:
            text = (
                "Compared with the last run of this workload on this configuration "
                "(a change inside the noise is no change):\n"
            )
            text += format_comparison(previous, newest, compare_runs(previous, newest, runs))
        found = view.query("#bench-compare")
        if found:
            found.first(Static).update(text)
        else:
            view.mount(Static(text, id="bench-compare", markup=False), before="#bench-history")

    def _show_capacity(self, event: dict) -> None:
        from tui.bench.capacity import answer
        from tui.bench.capacity.history import append_capacity, read_capacity_history
        from widgets.capacity_view import CapacityView

        bench_view = self._view()
        found = bench_view.query(CapacityView)
        if found:
            view = found.first()
        else:
            view = CapacityView(id="bench-capacity")
            bench_view.mount(view, before=bench_view.query_one("#bench-levels"))
        if event.get("event") == "error":
            view.show_error(str(event.get("message", "failed")))
            self.console.notify(f"capacity: {event.get('message')}", severity="error", timeout=10)
            return
        view.show_event(event)
        if event.get("event") == "result":
            result = event["result"]
            append_capacity(result)
            history = read_capacity_history()
            if not answer.is_finished(result):
                self.console.notify(
                    f"{result['answer']} (cancelled: the finished levels are kept; not an answer)",
                    title="Capacity search cancelled",
                    severity="warning",
                    timeout=15,
                )
                return
            view.show_uncertainty(
                answer.bracket_text(result),
                answer.spread_text(result, history),
                answer.truth_text(result),
            )
            self.console.notify(answer.capacity_line(result, history), title="Capacity", timeout=15)

    @console_worker(
        "bench",
        pane="bench",
        what=lambda app, preset_name: f"run the benchmark preset {preset_name}",
        user_action=True,
    )
    async def _run_bench(self, preset_name: str) -> None:
        from tui.bench.context import context_for_profile
        from tui.bench.driver import BenchProcess
        from tui.bench.workload import spec_from_preset

        preset = self.profile.benchmark.presets[preset_name]
        try:
            url = await self.deck.reachable_base_url()
            gpus, last = "", self.console.last_gpu
            if last is not None and last.statics:
                gpus = f"{len(last.statics)} x {last.statics[0].name}"
            context = replace(context_for_profile(self.profile, gpus), host=self.deck.host_label)
            spec = spec_from_preset(
                preset,
                url,
                api_key_env=self.profile.service.api_key_env,
                context=replace(context, base_url=url),
                percentiles=self.profile.benchmark.percentiles,
            )
            process = self.process = BenchProcess(spec)
            self.warming_up = spec.warmup_requests > 0
            self.console.refresh_bindings()  # c (cancel) joins the footer while it runs
            async for event in process.events():
                self.post_message(messages.BenchEvent(event))
        except ServedeckError as error:
            self.post_message(messages.BenchEvent(error))
        finally:
            self.process = None
            self.warming_up = False
            self.console.refresh_bindings()

    def show_event(self, message: messages.BenchEvent) -> None:
        from tui.bench.driver import BenchProgress, BenchStarted

        view = self._view()
        event = message.event
        if isinstance(event, dict):  # the capacity search's events
            self._show_capacity(event)
            return
        if isinstance(event, Exception):
            reason = failure_text(str(event))
            view.show_error(reason)
            append_audit("bench.failed", self.deck.host_label, {"error": reason})
            self.console.notify(
                f"Tried to run a benchmark against {self.deck.host_label}; it failed: {reason}. "
                "Nothing else was done.",
                title="Benchmark failed",
                severity="error",
                timeout=10,
            )
            return
        view.show_event(event)
        if isinstance(event, BenchProgress):  # level -1: the warm-up's answer awaited
            self.warming_up = event.level < 0
        elif not isinstance(event, BenchStarted):  # a level or the result: measuring now
            self.warming_up = False
        if isinstance(event, BenchResult):
            append_result(event)
            if event.levels and not any(level.completed for level in event.levels):
                self._bench_measured_nothing(event)
                return
            view.show_history(runs_for_host(self.deck.host_label))
            self._show_comparison(view, event)
            title, text, severity = result_toast(event)
            self.console.notify(text, title=title, severity=severity)  # type: ignore[arg-type]

    def _bench_measured_nothing(self, result: BenchResult) -> None:
        """A run in which no request completed measured nothing: a failure, never "done"."""
        failed = sum(level.failed for level in result.levels)
        errors = [error for level in result.levels for error in level.errors]
        why = failure_text(errors[0]) if errors else "no request completed"
        reason = f"no request completed ({failed} failed: {why})" if failed else why
        if result.partial:
            reason += "; the run was cut short"
        self._view().show_error(reason)
        append_audit(
            "bench.failed", self.deck.host_label, {"preset": result.preset, "error": reason}
        )
        self.console.notify(
            f"Tried to run the {result.preset} benchmark against {self.deck.host_label}; it "
            f"failed: {reason}. Nothing else was done.",
            title="Benchmark failed",
            severity="error",
            timeout=10,
        )
