"""HealthView: the interconnect doctor's findings and each GPU's health, as text.

A pure view: handed finished reports (tui.health), it draws them; it computes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

if TYPE_CHECKING:  # the reports' modules load with the first check, not the first frame
    from tui.health.interconnect.rules import InterconnectReport
    from tui.health.report import HealthReport

STYLES = {"crit": "bold red", "warn": "bold yellow", "info": "cyan", "ok": "bold green"}
MARKS = {"crit": "CRIT", "warn": "WARN", "info": "INFO", "ok": " OK "}


def _na(value: object) -> str:
    """A counter the GPU or driver does not report is n/a, never 0 or None."""
    return "n/a" if value is None else str(value)


class HealthView(Vertical):
    """Interconnect findings (check, GPU, evidence, fix), then a badge and events per GPU."""

    DEFAULT_CSS = """
    HealthView { height: 1fr; }
    HealthView > #health-title { height: auto; padding: 0 1; color: $text-muted; }
    HealthView > #health-probe { height: auto; padding: 0 1; }
    HealthView > #health-kernel { height: auto; padding: 0 1; color: $text-muted; }
    HealthView > #health-kernel.-failing { color: $error; text-style: bold; }
    HealthView #health-body { padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static("Reading the interconnect and GPU health ...", id="health-title")
        yield Static(
            "p: run the interconnect probe (idle GPUs only; asks first)", id="health-probe"
        )
        yield Static(
            "Kernel log: not followed yet (starts with the first GPU sample)", id="health-kernel"
        )
        with VerticalScroll(id="health-scroll"):
            yield Static(id="health-body")

    def show_probe(self, line: str) -> None:
        self.query_one("#health-probe", Static).update(line)

    def show_kernel(self, line: str, failing: bool) -> None:
        """Whether XIDs are being followed live; a lost follow is drawn as an error."""
        kernel = self.query_one("#health-kernel", Static)
        kernel.update(line)
        kernel.set_class(failing, "-failing")

    def show_error(self, message: str) -> None:
        self.query_one("#health-title", Static).update(message)

    def show(self, interconnect: InterconnectReport | None, health: HealthReport | None) -> None:
        text = Text()
        text.append("Interconnect (read-only doctor)\n", style="bold")
        if interconnect is None:
            text.append("  reading (shown when this pane is open) ...\n", style="dim")
        else:
            for note in interconnect.notes:
                text.append(f"  note: {note}\n", style="dim")
            if not interconnect.findings:
                text.append("  no interconnect problem found\n", style=STYLES["ok"])
            for f in interconnect.findings:
                where = f"GPU{f.gpu}" if f.gpu is not None else "box"
                text.append(f"  {MARKS.get(f.severity, f.severity)} ", style=STYLES.get(f.severity))
                text.append(f"{f.check:<16} {where:<5} {f.evidence}\n")
                text.append(f"       fix: {f.fix}\n", style="dim")
        text.append("\nGPU health (XID events, ECC, row remaps, PCIe replays)\n", style="bold")
        if health is not None:
            for note in health.notes:
                text.append(f"  note: {note}\n", style="dim")
            for gpu in health.gpus:
                text.append(f"  {MARKS.get(gpu.badge, gpu.badge)} ", style=STYLES.get(gpu.badge))
                c = gpu.counters
                figures = (
                    f"ECC unc. {_na(c.ecc_volatile_uncorrected)}/{_na(c.ecc_aggregate_uncorrected)}"
                    f"  replays {_na(c.pcie_replays)}  NVLink errors {_na(c.nvlink_errors)}"
                    if c
                    else "no counters"
                )
                text.append(f"GPU{gpu.index} {gpu.bus_id}  {figures}\n")
                for reason in gpu.reasons:
                    if not reason.startswith("XID "):
                        text.append(f"       {reason}\n", style="dim")
                for event in gpu.events:
                    text.append(f"       XID {event.number_text} {event.name}: ", style="yellow")
                    text.append(f"{event.detail or event.meaning} -> {event.action}\n")
            for event in health.unmatched_events:
                text.append(f"  XID {event.number_text} on {event.bus_id} (no GPU there now): ")
                text.append(f"{event.name} -> {event.action}\n")
        # The doctor's run time when it ran; a doctor that could not read the host has none.
        elapsed_s = interconnect.elapsed_s if interconnect else None
        took = ""
        if elapsed_s is not None:
            spent = f"{elapsed_s:.1f} s" if elapsed_s >= 0.1 else f"{elapsed_s * 1000:.0f} ms"
            took = f" Doctor took {spent}."
        source = health.event_source if health else "?"
        self.query_one("#health-title", Static).update(
            f"Kernel log: {source}.{took} Switch tabs to re-read."
        )
        self.query_one("#health-body", Static).update(text)
