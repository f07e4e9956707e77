"""The fault matrix: steps of the operator's day x faults, with what the console did in each cell.

A cell records whether the console survived, how long the fault took to show on its
pane, and how long the console took to resume after the host (or server) was back.
`render()` is the table quoted in reports; `check()` names every cell off target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
