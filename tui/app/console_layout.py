"""The console's panes and their widgets, as ServedeckApp.compose yields them.

Kept apart from the app so the App class holds what Textual asks of it; the widgets'
imports come with the layout that places them.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, TabbedContent, TabPane

from tui.core.config import Profile
from tui.core.paths import demo_records_note
from widgets.bench_view import BenchView
from widgets.footer import Footer
from widgets.gpu_pane import GpuPane
from widgets.header_bar import HeaderBar
from widgets.health_view import HealthView
from widgets.host_overview import HostOverviewView
from widgets.load_strip import LoadStrip
from widgets.load_why import LoadWhy
from widgets.log_pane import LogPane
from widgets.plan_view import PlanView
from widgets.procs_pane import ProcsPane
from widgets.service_line import ServiceLine


def compose_panes(profile: Profile, *, browser: bool) -> ComposeResult:
    """The header, the numbered panes and the footer of one profile's console."""
    header = HeaderBar(id="header")
    header.profile_name = profile.name
    header.route = profile.host.route
    header.simulated = profile.is_demo
    header.read_only = profile.read_only
    header.browser = browser
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
            if profile.is_demo:  # the operator's real records stay clean
                yield Static(demo_records_note(), id="bench-records", classes="pane-note")
            yield BenchView(id="bench-view")
        with TabPane("5 Plan", id="plan"), Vertical():
            yield Static("", id="plan-status", classes="pane-note")
            yield PlanView(id="plan-view")
        with TabPane("7 Health", id="health"):
            yield HealthView(id="health-view")
    # The palette is on `?`, `:` and ctrl+p: 80 columns of footer go to the keys that work here.
    yield Footer(show_command_palette=False)
