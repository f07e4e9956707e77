"""The servedeck console: wires sources to widgets through workers and messages.

Workers run the sources and post Messages; message handlers own the UI
(Textual's thread-safety rule). A poll is re-armed only after it finished.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, TabbedContent, TabPane

from tui.config import Profile
from tui.deck import Deck
from tui.errors import ServedeckError
from tui.hostinfo import HostOverview, collect_overview
from tui.hosts.base import Host
from tui.keymap import COMMANDS
from tui.loadwatch import LoadProgress
from tui.screens.help import HelpScreen
from tui.screens.summary import SummaryScreen
from widgets.header_bar import HeaderBar
from widgets.host_overview import HostOverviewView


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


class ServedeckApp(App[int]):
    """One console for one profile's host."""

    CSS_PATH = "app.tcss"
    TITLE = "servedeck"
    BINDINGS = _bindings()

    @dataclass
    class OverviewReady(Message):
        overview: HostOverview

    @dataclass
    class HostFailed(Message):
        message: str

    def __init__(
        self,
        profile: Profile,
        host: Host,
        overview_interval_s: float = 30.0,
        deck: Deck | None = None,
    ) -> None:
        super().__init__()
        self.profile = profile
        self.host = host
        # The deck the summary collects from; the host is closed on unmount, not by it.
        self.deck = deck or Deck(profile, host)
        # Set by the log pane's tracker when it follows a load; the summary prefers it.
        self.load_progress: LoadProgress | None = None
        self.overview_interval_s = overview_interval_s
        self.sub_title = profile.name

    def compose(self) -> ComposeResult:
        header = HeaderBar(id="header")
        header.profile_name = self.profile.name
        header.route = self.profile.host.route
        header.simulated = self.profile.is_demo
        header.read_only = self.profile.read_only
        yield header
        with TabbedContent(id="panes", initial="overview"):
            with TabPane("Overview", id="overview"):
                yield HostOverviewView(id="host-overview")
        yield Footer()

    def on_mount(self) -> None:
        if self.profile.keys:
            self.set_keymap(dict(self.profile.keys))
        self.query_one(HostOverviewView).show_waiting(
            f"Connecting to {self.profile.host.route} ..."
        )
        self._collect_overview()

    # --- overview -----------------------------------------------------------------
    @work(exclusive=True, group="overview")
    async def _collect_overview(self) -> None:
        try:
            overview = await collect_overview(self.host)
        except ServedeckError as error:
            self.post_message(self.HostFailed(str(error)))
        else:
            self.post_message(self.OverviewReady(overview))

    def on_servedeck_app_overview_ready(self, message: OverviewReady) -> None:
        header = self.query_one(HeaderBar)
        header.connection_state = "connected"
        header.connection_detail = message.overview.hostname
        self.query_one(HostOverviewView).show_overview(message.overview)
        self._schedule_overview()

    def on_servedeck_app_host_failed(self, message: HostFailed) -> None:
        header = self.query_one(HeaderBar)
        header.connection_state = "unreachable"
        header.connection_detail = ""
        self.query_one(HostOverviewView).show_error(message.message)
        self.notify(message.message, title="Host unreachable", severity="error", timeout=8)
        self._schedule_overview()

    def _schedule_overview(self) -> None:
        # Re-armed only after the previous collection finished: polls never overlap.
        self.set_timer(self.overview_interval_s, self._collect_overview, name="overview-poll")

    # --- actions ------------------------------------------------------------------
    def action_help(self) -> None:
        self.push_screen(HelpScreen(COMMANDS, self._effective_keys()))

    def _effective_keys(self) -> dict[str, str]:
        keymap = dict(self.profile.keys)
        return {
            command.binding_id: keymap.get(command.binding_id, command.key_display or command.key)
            for command in COMMANDS
        }

    def action_refresh(self) -> None:
        self.query_one(HeaderBar).connection_state = "connecting"
        self._collect_overview()

    def action_summary(self) -> None:
        self.push_screen(SummaryScreen(self._summary_markdown, self._export_summary))

    async def _summary_markdown(self) -> str:
        from tui.summary import collect_summary, render_markdown, summary_secrets

        inputs = await collect_summary(self.deck, load=self.load_progress)
        return render_markdown(inputs, summary_secrets(self.deck))

    def _export_summary(self, markdown: str) -> Path:
        from tui import paths
        from tui.summary import export_summary

        folder = paths.data_dir() / "summaries"
        folder.mkdir(parents=True, exist_ok=True)
        return export_summary(markdown, self.profile.name, folder=folder)

    def action_show_tab(self, tab_id: str) -> None:
        self.query_one(TabbedContent).active = tab_id

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for command in COMMANDS:
            if command.action in ("command_palette",):
                continue
            yield SystemCommand(
                command.label, command.help, lambda action=command.action: self.run_action(action)
            )

    async def on_unmount(self) -> None:
        await self.host.close()
