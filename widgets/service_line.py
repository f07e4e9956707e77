"""One line about the service: unit state, main pid, since when, restarts, readiness."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from tui.serving.progress.model import ProgressVerdict
from tui.serving.unit.service import UnitState
from widgets.quiet_update import update_static

_STATE_STYLES = {
    "active": "bold green",
    "activating": "bold yellow",
    "deactivating": "bold yellow",
    "inactive": "dim",
    "failed": "bold red",
}

_PROGRESS_STYLES = {"stalled": "bold red", "slow": "yellow", "serving": "green", "idle": "dim"}


class ServiceLine(Static):
    DEFAULT_CSS = "ServiceLine { height: 1; padding: 0 1; }"

    def show(
        self,
        state: UnitState | None,
        host_label: str,
        ready: bool,
        error: str | None = None,
        leftovers: str | None = None,
        progress: ProgressVerdict | None = None,
        asleep: bool = False,
        offer: str | None = None,
        sleep_level: int | None = None,
    ) -> None:
        """`leftovers`: what the last process listing found left on the GPUs, said next to
        the state (after a stop it is what the operator must act on), before the rest.
        `offer`: the keys offered while stalled ("D stacks · R restart"), after the verdict."""
        line = Text(no_wrap=True, overflow="ellipsis")
        if state is None:
            line.append("service: ", style="bold")
            line.append(error or "unknown", style="yellow")
            if leftovers:
                line.append(f"  {leftovers}", style="bold yellow")
            update_static(self, line)
            return
        line.append(state.unit, style="bold")
        line.append(" ")
        line.append(
            f"{state.active_state} ({state.sub_state})",
            style=_STATE_STYLES.get(state.active_state, ""),
        )
        # Readiness next to the state; the rest only as far as it fits whole (80 columns
        # hold the unit, its state and readiness, not always its pid and start time).
        # A stopped unit with leftovers: the leftovers take the place of "not serving",
        # so the line fits 80 columns whole.
        if asleep and state.is_active:  # vLLM's sleep mode: answers /health, serves nothing
            line.append("  ")
            level = f" (level {sleep_level})" if sleep_level else ""
            line.append(f"◐ asleep{level}", style="bold cyan")
        elif ready or state.is_active or not leftovers:
            line.append("  ")
            line.append(
                "● ready" if ready else "○ not serving", style="bold green" if ready else "dim"
            )
        if leftovers:
            line.append(f"  {leftovers}", style="bold yellow")
        if progress is not None and progress.state != "unknown" and not asleep:
            line.append(f"  {progress.headline()}", style=_PROGRESS_STYLES[progress.state])
            if offer:
                line.append(f"  [{offer}]", style="bold")
        extras: list[tuple[str, str]] = []
        if state.is_failed and state.result:
            extras.append((f"  result {state.result}", "red"))
        if state.n_restarts:
            extras.append((f"  restarts {state.n_restarts}", "yellow"))
        if state.main_pid:
            extras.append((f"  pid {state.main_pid}", ""))
        if state.started_at_s and state.is_active:
            started = time.strftime("%H:%M:%S", time.localtime(state.started_at_s))
            extras.append((f"  since {started}", ""))
        extras.append((f"  on {host_label}", "dim"))
        room = self.content_region.width or 200
        for text, style in extras:
            if line.cell_len + len(text) <= room:
                line.append(text, style=style)
        update_static(self, line)
