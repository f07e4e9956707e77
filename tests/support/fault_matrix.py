"""The fault matrix and the driver that fills it: steps of the operator's day x faults.

A cell records whether the console survived, how long the fault took to show on its
pane, and how long the console took to resume after the host (or server) was back.
`render()` is the table quoted in reports; `check()` names every cell off target.
`Day` / `SshDay` drive one console through the day and inject the faults.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.e2e_support import process_argvs
from tests.support.sshd_fixtures import SshdPair
from tui.app import ServedeckApp
from tui.core.audit import read_audit
from tui.logs.line import LogLine
from widgets.header_bar import HeaderBar
from widgets.log_pane import LogPane

# 6 s: the SSH host's reconnect backoff (0.5, 1, 2, then 3 s at most) reaches its cap
# after 3.5 s, so an outage this long already has a retry at the longest wait; a longer
# one only repeats that retry (four outages a day, each wall time).
OUTAGE_S = float(os.environ.get("SERVEDECK_FAULT_OUTAGE_S", "6"))
WAIT_S = 120.0
SHOWN_TARGET_S = 2.0
RECOVERED_TARGET_S = 5.0


@dataclass
class Cell:
    step: str
    fault: str
    survived: bool
    shown_s: float | None
    recovered_s: float | None
    note: str = ""

    def text(self) -> str:
        if not self.survived:
            return "DIED"
        shown = "not shown" if self.shown_s is None else f"shown {self.shown_s:.1f} s"
        back = "not back" if self.recovered_s is None else f"back {self.recovered_s:.1f} s"
        return f"survived, {shown}, {back}"


@dataclass
class FaultMatrix:
    cells: list[Cell] = field(default_factory=list)

    def add(self, cell: Cell) -> None:
        self.cells.append(cell)

    def render(self) -> str:
        steps = list(dict.fromkeys(cell.step for cell in self.cells))
        faults = list(dict.fromkeys(cell.fault for cell in self.cells))
        table = {(cell.step, cell.fault): cell for cell in self.cells}
        lines = [
            "| step | " + " | ".join(faults) + " |",
            "|---|" + "---|" * len(faults),
        ]
        for step in steps:
            row = [table[(step, f)].text() if (step, f) in table else "-" for f in faults]
            lines.append(f"| {step} | " + " | ".join(row) + " |")
        notes = [f"- {c.step} / {c.fault}: {c.note}" for c in self.cells if c.note]
        return "\n".join(lines + (["", *notes] if notes else []))

    def check(self, slack: float = 1.0) -> list[str]:
        """Every cell off target: died, fault not shown in 2 s, not back within 5 s."""
        problems = []
        for cell in self.cells:
            where = f"{cell.step} / {cell.fault}"
            if not cell.survived:
                problems.append(f"{where}: the console exited")
            if cell.shown_s is None or cell.shown_s > SHOWN_TARGET_S * slack:
                problems.append(f"{where}: fault shown after {cell.shown_s} s")
            if cell.recovered_s is None or cell.recovered_s > RECOVERED_TARGET_S * slack:
                problems.append(f"{where}: resumed after {cell.recovered_s} s")
        return problems


def matrix_out(tmp_path: Path, name: str, matrix: FaultMatrix) -> None:
    text = matrix.render()
    print(f"\n{name}\n{text}")
    target = Path(os.environ.get("SERVEDECK_FAULT_MATRIX", tmp_path / "fault-matrix.md"))
    with target.open("a") as handle:
        handle.write(f"\n### {name}\n\n{text}\n")


def remote_tails(path: Path) -> list[int]:
    """Processes on "the box" following the log (what a cut session could leave behind)."""
    wanted = str(path).encode()
    return [
        pid
        for pid, argv in process_argvs()
        if argv[0].endswith(b"tail") and b"-F" in argv and wanted in argv
    ]


class Day:
    """Drives one console through the day and records each fault's cell."""

    def __init__(self, pilot: object, app: ServedeckApp, matrix: FaultMatrix) -> None:
        self.pilot = pilot
        self.app = app
        self.matrix = matrix
        self.header = app.query_one(HeaderBar)

    async def pause(self, seconds: float = 0.05) -> None:
        await self.pilot.pause(seconds)  # type: ignore[attr-defined]

    async def until(
        self, predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await self.pause(0.05)

    async def timed(
        self, predicate: Callable[[], bool], since_s: float, limit_s: float
    ) -> float | None:
        """Seconds from since_s until predicate holds; None when it did not within limit_s."""
        while not predicate():
            if time.monotonic() - since_s > limit_s:
                return None
            await self.pause(0.05)
        return time.monotonic() - since_s

    def alive(self) -> bool:
        return self.app.is_running and not self.app._exit

    def lost(self) -> bool:
        return self.app.sources.health["host"].failing

    async def outage_shown_s(self, since_s: float, limit_s: float) -> float | None:
        """Seconds from since_s to the console's own stamp of the outage it showed.

        The console stamps each outage when it shows it (app.sources.host_outages), so a cut that
        a fast reconnect ends within half a second is measured as shown even when this
        test's polling, slowed by a busy screen, never looks during it.
        """

        def first() -> float | None:
            starts = [
                o.started_mono_s
                for o in self.app.sources.host_outages
                if o.started_mono_s >= since_s
            ]
            return starts[0] - since_s if starts else None

        while (shown_s := first()) is None:
            if time.monotonic() - since_s > limit_s:
                return None
            await self.pause(0.05)
        return shown_s

    def back(self) -> bool:
        return (
            not self.app.sources.health["host"].failing
            and self.header.connection_state == "connected"
        )

    async def settled(self) -> None:
        await self.until(self.back, "the connection before the next fault")

    def record(
        self, step: str, fault: str, shown_s: float | None, back_s: float | None, note: str = ""
    ) -> None:
        self.matrix.add(Cell(step, fault, self.alive(), shown_s, back_s, note))


class SshDay(Day):
    def __init__(
        self, pilot: object, app: ServedeckApp, matrix: FaultMatrix, sshd: SshdPair
    ) -> None:
        super().__init__(pilot, app, matrix)
        self.sshd = sshd

    async def cut(
        self,
        step: str,
        shown: Callable[[], bool] | None = None,
        back: Callable[[], bool] | None = None,
        note: str = "",
    ) -> None:
        """Kill the box's sshd session processes; the host is back at once."""
        await self.settled()
        started = time.monotonic()
        assert self.sshd.second.kill_connections() >= 1
        if shown is None:
            shown_s = await self.outage_shown_s(started, 10)
        else:
            shown_s = await self.timed(shown, started, 10)
        back_s = await self.timed(back or self.back, started, 30)
        self.record(step, "SSH cut", shown_s, back_s, note)

    async def outage(
        self,
        step: str,
        back: Callable[[], bool] | None = None,
        note: str = "",
        during: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Stop the box's sshd for OUTAGE_S (doing `during` once the fault shows), restart it."""
        await self.settled()
        started = time.monotonic()
        self.sshd.second.stop()
        await self.down_then_up(step, started, back, note, during)

    async def down_then_up(
        self,
        step: str,
        started: float,
        back: Callable[[], bool] | None,
        note: str,
        during: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        shown_s = await self.outage_shown_s(started, 10)
        if during is not None:
            await during()
        while time.monotonic() - started < OUTAGE_S:
            await self.pause(0.2)
            assert self.alive(), f"the console exited during the outage at {step}"
        self.sshd.second.start()
        restarted = time.monotonic()
        back_s = await self.timed(back or self.back, restarted, 30)
        self.record(step, f"sshd down {OUTAGE_S:g} s", shown_s, back_s, note)


def kill_outcomes() -> int:
    return sum(1 for record in read_audit() if record["event"] == "kill-outcome")


def pane_lines(app: ServedeckApp) -> list[str]:
    pane = app.query_one(LogPane)
    queued = [LogLine(*entry) for entry in pane._pending]  # kept as the buffer keeps lines
    lines = [*pane.buffer, *queued, *app.logs.incoming]
    return [line.text for line in lines if not line.text.startswith("servedeck:")]
