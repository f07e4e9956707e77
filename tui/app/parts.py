"""The console as its parts see it, for mypy.

ServedeckApp is assembled from parts (the mixins in tui/app/console_*.py). Each part
derives from ConsoleParts, which declares the Textual App and the state and methods of
ServedeckApp and of the other parts that the parts use. At run time ConsoleParts is
`object`: the app's method resolution order is exactly what it was without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from typing import Any

    from textual.app import App
    from textual.widgets import TabbedContent
    from textual.worker import Worker

    from tui.bench.driver import BenchProcess
    from tui.core.config import Profile
    from tui.deck import Deck
    from tui.gpu.model import GpuBoxSnapshot
    from tui.procs.model import ProcListing
    from tui.record.session import ConsoleRecording
    from tui.serving.load.live import LiveLoad
    from tui.serving.load.tracker import LoadProgress, LoadTracker
    from tui.serving.service import UnitState
    from tui.source_health import SourceHealth
    from widgets.gpu_pane import GpuPane

    class ConsoleParts(App[int]):
        """What a part may use: the App, plus what ServedeckApp and the other parts define."""

        profile: Profile
        deck: Deck
        last_gpu: GpuBoxSnapshot | None
        listing: ProcListing | None
        bench_process: BenchProcess | None
        procs_status_text: str
        progress: LoadProgress | None
        tracker: LoadTracker
        ready: bool
        unit_state: UnitState | None
        _tabs: TabbedContent
        _overview_wake: asyncio.Event
        _gpu_pane: GpuPane
        health: dict[str, SourceHealth]
        recording: ConsoleRecording | None

        # ServedeckApp (tui/app/console.py)
        def poll_later(self, delay_s: float, poll: Callable[[], object], name: str) -> None: ...
        def _tab_visible(self, tab_id: str) -> bool:
            raise NotImplementedError

        def _show_gpus(self, snapshot: GpuBoxSnapshot) -> None: ...
        def _render_service_line(self, error: str | None = None) -> None: ...
        def _freeze_load(self) -> None: ...
        def _refuse_read_only(self, key: str, label: str, action: str) -> None: ...
        def action_show_tab(self, tab_id: str) -> None: ...
        def _poll_overview(self) -> Worker[Any]:
            raise NotImplementedError

        def _poll_gpus(self) -> Worker[Any]:
            raise NotImplementedError

        def _poll_service(self) -> Worker[Any]:
            raise NotImplementedError

        def _poll_metrics(self) -> Worker[Any]:
            raise NotImplementedError

        def _follow_log(self) -> Worker[Any]:
            raise NotImplementedError

        # the other parts
        def _record_load_live(self, live: LiveLoad | None) -> None: ...  # console_record
        def source_ok(self, source: str) -> None: ...  # console_health
        def _set_health(
            self, source: str, failure: str | None, retry_in_s: float | None = None
        ) -> None: ...  # console_health
        def _refresh_procs(self) -> Worker[Any]:  # console_processes
            raise NotImplementedError

        def _record_listing(self, listing: ProcListing) -> None: ...  # console_record

else:
    ConsoleParts = object
