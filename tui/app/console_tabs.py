"""The console's tabs: which pane is on screen, focus that follows it, a pane's first look.

A part of ServedeckApp. A pane shown redraws or re-reads what it skipped while hidden
(the GPU rows, the process list, the plan, the health checks); focus goes to the pane's
widget with keys, so they work without Tab and show in the footer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import TabbedContent

from tui.app.console_protocol import Console, Part
from tui.offered import focus_target
from tui.screens.help import HelpScreen
from tui.screens.kill_confirm import KillConfirmScreen

if TYPE_CHECKING:
    from tui.deck import Deck


class TabsPart(Part):
    """The panes' tabs: the active one, and what each pane does when it is shown."""

    def __init__(
        self, deck: Deck, console: Console, on_shown: Mapping[str, Callable[[], object]]
    ) -> None:
        super().__init__(deck, console)
        self._on_shown = on_shown  # tab id -> what that pane does when it comes on screen
        self._tabs: TabbedContent | None = None  # looked up once, at mount: asked every tick

    def mount(self) -> None:
        self._tabs = self.console.query_one(TabbedContent)
        # Tab goes between the panes' widgets that have keys; the tab bar has none of its
        # own (the number keys switch panes), so it takes no focus.
        self._tabs.query_one("ContentTabs").can_focus = False

    def active(self) -> str | None:
        """The pane whose tab is active (None before the first frame)."""
        return None if self._tabs is None else self._tabs.active

    def visible(self, tab_id: str) -> bool:
        return self.active() == tab_id and not isinstance(
            self.console.screen, (HelpScreen, KillConfirmScreen)
        )

    def show(self, tab_id: str) -> None:
        self.console.query_one(TabbedContent).active = tab_id

    def activated(self, pane_id: str) -> None:
        self._focus(pane_id)
        self.console.refresh_bindings()  # keys of one pane (k on Processes) show only there
        shown = self._on_shown.get(pane_id)
        if shown is not None:
            shown()

    def _focus(self, tab_id: str) -> None:
        """Focus follows the pane on screen: its keys work without Tab and show in the footer."""
        target = focus_target(tab_id)
        if target is not None and not isinstance(self.console.screen, ModalScreen):
            with contextlib.suppress(NoMatches):  # the pane may still be mounting
                self.console.query_one(target).focus()
