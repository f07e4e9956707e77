"""The console's keys, each handed to the part that does it in one line.

Textual finds an `action_*` method on the App only, so ServedeckApp inherits these; the
parts they name are the App's own attributes, declared here with their types so mypy
checks every call. This class holds no state and writes no attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.app.console_bench import BenchPart
    from tui.app.console_handoff import HandoffPart
    from tui.app.console_hardware import HardwarePart
    from tui.app.console_keys import KeysPart
    from tui.app.console_overview import OverviewPart
    from tui.app.console_processes import ProcessesPart
    from tui.app.console_record import RecordPart
    from tui.app.console_service import ServicePart
    from tui.app.console_sleep import SleepPart
    from tui.app.console_stacks import StacksPart
    from tui.app.console_tabs import TabsPart
    from tui.app.console_tune import TunePart


class ConsoleActions:
    """The `action_*` of every key in the `app` scope of tui/core/keymap.py."""

    bench: BenchPart
    handoff: HandoffPart
    hardware: HardwarePart
    keys: KeysPart
    overview: OverviewPart
    procs: ProcessesPart
    record: RecordPart
    service: ServicePart
    sleep: SleepPart
    stacks: StacksPart
    tabs: TabsPart
    tune: TunePart

    def action_service(self, verb: str) -> None:
        self.service.act(verb)

    def action_sleep_mode(self, verb: str) -> None:
        self.sleep.act(verb)

    def action_refresh(self) -> None:
        self.overview.refresh_asked()
        self.procs.refresh()

    def action_stacks(self) -> None:
        self.stacks.dump()

    def action_kill_leftovers(self) -> None:
        self.procs.kill_leftovers()

    def action_kill_selected(self) -> None:
        self.procs.kill_selected()

    def action_bench(self, preset_name: str | None = None) -> None:
        self.bench.run(preset_name)

    def action_bench_pick(self) -> None:
        self.bench.pick()

    def action_bench_cancel(self) -> None:
        self.bench.cancel()

    def action_bench_capacity(self) -> None:
        self.bench.capacity()

    def action_probe(self) -> None:
        self.hardware.probe()

    def action_summary(self) -> None:
        self.handoff.preview_summary()

    def action_export_summary(self) -> None:
        self.handoff.export_summary()

    def action_tune(self) -> None:
        self.tune.open()

    def action_timeline(self) -> None:
        self.record.show_timeline()

    def action_alerts(self) -> None:
        self.record.show_alerts()

    def action_help(self) -> None:
        self.keys.help()

    def action_show_tab(self, tab_id: str) -> None:
        self.tabs.show(tab_id)
