"""The Host overview pane: what machine this is, drawn from a HostOverview snapshot."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from tui.core.formatting import gib, uptime
from tui.hostfacts.hostinfo import HostOverview


class HostOverviewView(Static):
    """A pure view of one HostOverview (or a waiting / error line)."""

    DEFAULT_CSS = """
    HostOverviewView {
        padding: 1 2;
        height: auto;
    }
    """

    stale_note = ""

    def show_waiting(self, message: str) -> None:
        self.update(Text(message, style="dim italic"))

    def show_error(self, message: str) -> None:
        self.update(Text(message, style="bold red"))

    def show_overview(self, overview: HostOverview, stale_note: str = "") -> None:
        """`stale_note`: the host stopped answering; the last overview stays, marked stale."""
        self.stale_note = stale_note
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        cores = f"{overview.cpu_cores} cores" if overview.cpu_cores else "? cores"
        numa = f", {overview.numa_nodes} NUMA nodes" if overview.numa_nodes else ""
        memory = "?"
        if overview.mem_total_bytes:
            memory = f"{gib(overview.mem_total_bytes)} total"
            if overview.mem_available_bytes is not None:
                memory += f", {gib(overview.mem_available_bytes)} available"
        table.add_row("Hostname", overview.hostname)
        table.add_row("OS", overview.os_name)
        table.add_row("Kernel", f"{overview.kernel} ({overview.arch})")
        table.add_row("CPU", f"{overview.cpu_model}, {cores}{numa}")
        table.add_row("RAM", memory)
        table.add_row("Uptime", f"{uptime(overview.uptime_s)}  load {overview.loadavg}")
        if overview.gpu_names:
            driver = f"  driver {overview.driver_version}" if overview.driver_version else ""
            table.add_row(
                "GPUs", Text(f"{len(overview.gpu_names)} x {overview.gpu_names[0]}{driver}")
            )
            distinct = sorted(set(overview.gpu_names))
            if len(distinct) > 1:
                table.add_row("", ", ".join(distinct))
        else:
            table.add_row("GPUs", Text(overview.gpu_error or "none", style="yellow"))
        if stale_note:
            self.update(Group(Text(stale_note, style="bold red"), Text(""), table))
        else:
            self.update(table)
