"""The console as its parts see it: the `Console` protocol, and `Part`, what every part holds.

A part (processes, bench, record, ...) owns its state and workers and is built with the
Deck and a Console: the few things of the App it uses (toasts, messages, screens,
workers, the panes' widgets) and the core polls' latest state, read only. ServedeckApp
is a Console; mypy checks it is one where it builds its parts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

if TYPE_CHECKING:
    from textual.message import Message
    from textual.notifications import SeverityLevel
    from textual.screen import Screen, ScreenResultCallbackType
    from textual.timer import Timer
    from textual.widget import Widget
    from textual.worker import Worker

    from tui.core.config import Profile
    from tui.deck import Deck
    from tui.gpu.model import GpuBoxSnapshot
    from tui.serving.load.tracker import LoadProgress, LoadTracker
    from tui.serving.unit.service import UnitState

WidgetT = TypeVar("WidgetT", bound="Widget")
ResultT = TypeVar("ResultT")


class Console(Protocol):
    """What a part may use of the console: Textual's App, and the state of the core polls."""

    # --- Textual's App ---------------------------------------------------------------
    @property
    def screen(self) -> Screen[object]: ...
    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...
    def post_message(self, message: Message) -> bool: ...
    def push_screen(
        self,
        screen: Screen[ResultT] | str,
        callback: ScreenResultCallbackType[ResultT] | None = None,
        wait_for_dismiss: bool = False,
        *,
        mode: str | None = None,
    ) -> Any: ...
    def run_worker(self, *args: Any, **kwargs: Any) -> Worker[Any]: ...
    def bell(self) -> None: ...
    def refresh_bindings(self) -> None: ...
    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...
    def set_timer(
        self,
        delay: float,
        callback: Callable[[], Any] | None = None,
        *,
        name: str | None = None,
        pause: bool = False,
    ) -> Timer: ...
    def set_interval(
        self,
        interval: float,
        callback: Callable[[], Any] | None = None,
        *,
        name: str | None = None,
        repeat: int = 0,
        pause: bool = False,
    ) -> Timer: ...
    @overload
    def query_one(self, selector: str) -> Widget: ...
    @overload
    def query_one(self, selector: type[WidgetT]) -> WidgetT: ...
    @overload
    def query_one(self, selector: str, expect_type: type[WidgetT]) -> WidgetT: ...

    # --- the console's own ------------------------------------------------------------
    @property
    def last_gpu(self) -> GpuBoxSnapshot | None:
        """The GPU sample on screen (the last good one while the source fails)."""

    @property
    def unit_state(self) -> UnitState | None:
        """The unit as last read; None while unknown or without a unit."""

    @property
    def progress(self) -> LoadProgress | None:
        """The load as the log last told it."""

    @property
    def ready(self) -> bool:
        """The server answered its readiness probe (until it stops)."""

    @property
    def tracker(self) -> LoadTracker:
        """The load tracker the log feeds."""

    def tab_visible(self, tab_id: str) -> bool:
        """The pane is on screen (its tab active, no help or kill dialog over it)."""

    def active_tab(self) -> str | None:
        """The pane whose tab is active."""

    def action_show_tab(self, tab_id: str) -> None:
        """Bring a pane to the front."""

    def poll_later(self, delay_s: float, poll: Callable[[], object], name: str) -> None:
        """Arm the next run of a poll, replacing a pending one of the same name."""

    def render_service_line(self) -> None:
        """Redraw the service line (the unit, readiness, leftovers on the GPUs)."""

    def show_gpus(self, snapshot: GpuBoxSnapshot) -> None:
        """A GPU sample taken outside the poll (a kill's re-check): shown as the poll's."""

    def refuse_read_only(self, key: str, label: str, action: str) -> None:
        """Say no to an action that changes the host, read-only, and audit it."""


class Part:
    """A part of the console: its Deck, its profile, and the console it draws on.

    `console_worker` starts a part's worker and posts its failure through the part's
    `run_worker` and `post_message`: they are the console's own, so every worker still
    belongs to the App (cancelled when it quits) and every message reaches it.
    """

    def __init__(self, deck: Deck, console: Console) -> None:
        self.deck = deck
        self.profile: Profile = deck.profile
        self.console = console
        self.run_worker = console.run_worker
        self.post_message = console.post_message
