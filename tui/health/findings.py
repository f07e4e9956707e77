"""One shape for every hardware finding, so the CLI, the pane and the summary agree."""

from __future__ import annotations

from dataclasses import asdict, dataclass

INFO, WARN, CRIT = "info", "warn", "crit"
_RANK = {CRIT: 0, WARN: 1, INFO: 2}


@dataclass(frozen=True, slots=True)
class Finding:
    """A check that found something: what, how bad, on which GPU, the proof, the fix.

    `gpu` is a GPU index, or None for a box-wide finding; `evidence` quotes the
    exact line or value read from the host, so an operator can check it.
    """

    check: str
    severity: str  # info | warn | crit
    gpu: int | None
    evidence: str
    fix: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Worst first, then by GPU (box-wide first), then by check name."""
    return sorted(
        findings,
        key=lambda f: (_RANK.get(f.severity, 3), -1 if f.gpu is None else f.gpu, f.check),
    )
