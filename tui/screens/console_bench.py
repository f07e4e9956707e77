"""The console's Bench pane: run a preset in its own process, draw its events, keep the history."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tui.audit import append_audit
from tui.bench.history import append_result, runs_for_host
from tui.bench.model import BenchResult
from tui.errors import ServedeckError
from tui.screens.console_guard import while_open
from tui.screens.console_workers import console_worker, failure_text
from tui.screens.preset_picker import PresetPickerScreen
from widgets.bench_view import BenchView

if TYPE_CHECKING:
    from tui.app import ServedeckApp


class BenchMixin:
    """Mixed into ServedeckApp (whose messages and state it uses)."""

    def action_bench(self, preset_name: str | None = None) -> None:
        if self.bench_process is not None:
            self.notify("A benchmark is already running (c cancels it).", severity="warning")
            return
        name = preset_name or self.profile.benchmark.default_preset
        self.action_show_tab("bench")
        self._run_bench(name)

    def action_bench_pick(self) -> None:
        presets = self.profile.benchmark.presets

        def picked(name: str | None) -> None:
            if name:
                self.action_bench(name)

        self.push_screen(PresetPickerScreen(presets, self.profile.benchmark.default_preset), picked)

    def action_bench_cancel(self) -> None:
        if self.bench_process is not None:
            self.bench_process.cancel()
            self.notify("Cancelling the benchmark; partial results are kept.")
        else:
            self.notify("No benchmark is running.", title="Bench", timeout=3)

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
            gpus = ""
            if self.last_gpu is not None and self.last_gpu.statics:
                gpus = f"{len(self.last_gpu.statics)} x {self.last_gpu.statics[0].name}"
            context = replace(context_for_profile(self.profile, gpus), host=self.deck.host_label)
            spec = spec_from_preset(
                preset,
                url,
                api_key_env=self.profile.service.api_key_env,
                context=replace(context, base_url=url),
            )
            self.bench_process = BenchProcess(spec)
            async for event in self.bench_process.events():
                self.post_message(self.BenchEvent(event))
        except ServedeckError as error:
            self.post_message(self.BenchEvent(error))
        finally:
            self.bench_process = None

    @while_open
    def on_servedeck_app_bench_event(self, message: ServedeckApp.BenchEvent) -> None:
        view = self.query_one(BenchView)
        event = message.event
        if isinstance(event, Exception):
            reason = failure_text(str(event))
            view.show_error(reason)
            append_audit("bench.failed", self.deck.host_label, {"error": reason})
            self.notify(
                f"Tried to run a benchmark against {self.deck.host_label}; it failed: {reason}. "
                "Nothing else was done.",
                title="Benchmark failed",
                severity="error",
                timeout=10,
            )
            return
        view.show_event(event)
        if isinstance(event, BenchResult):
            append_result(event)
            view.show_history(runs_for_host(self.deck.host_label))
            single = event.single_stream_tok_s
            detail = f"1-stream {single:,.1f} tok/s (output tok/s at c=1)" if single else "done"
            self.notify(f"{event.preset}: {detail}", title="Benchmark")
