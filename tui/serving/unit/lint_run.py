"""`servedeck doctor --unit`: read the profile's unit through its Host and lint it.

`systemctl cat` gives the unit and its drop-ins; the journal's last
"Stopping"/"Stopped" pair gives the observed stop time that TimeoutStopSec must
exceed. On the simulator the seed-shaped unit text is linted instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.hosts.base import Host
from tui.serving.unit.lint import UnitFinding, lint_unit, observed_stop_s, parse_unit


@dataclass(frozen=True, slots=True)
class UnitLintReport:
    unit: str
    sources: tuple[str, ...]
    observed_stop_s: float | None
    findings: tuple[UnitFinding, ...]

    @property
    def ok(self) -> bool:
        return not any(finding.severity == "fail" for finding in self.findings)

    def as_dict(self) -> dict[str, object]:
        return {
            "unit": self.unit,
            "sources": list(self.sources),
            "observed_stop_s": self.observed_stop_s,
            "findings": [finding.as_dict() for finding in self.findings],
        }


def expected_environment(profile: Profile) -> tuple[str, ...]:
    """The profile's unit_environment, plus its API key variable (vLLM reads it at start)."""
    names = list(profile.service.unit_environment)
    if profile.service.api_key_env:
        names.append(profile.service.api_key_env)
    return tuple(dict.fromkeys(names))


async def read_unit_text(host: Host, unit: str) -> str:
    result = await host.run(["systemctl", "cat", "--no-pager", unit], timeout_s=15.0)
    if not result.ok or not result.stdout.strip():
        detail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ServedeckError(f"{host.label}: systemctl cat {unit} failed: {detail}")
    return result.stdout


async def read_stop_s(host: Host, unit: str) -> float | None:
    """The last stop's duration from the journal; None when the journal cannot say."""
    argv = ["journalctl", "-u", unit, "-o", "short-unix", "--no-pager", "-n", "20000"]
    try:
        result = await host.run(argv, timeout_s=20.0)
    except ServedeckError:
        return None
    return observed_stop_s(result.stdout) if result.ok else None


def lint_text(profile: Profile, unit: str, text: str, stop_s: float | None) -> UnitLintReport:
    parsed = parse_unit(unit, text)
    findings = lint_unit(
        parsed,
        expected_env=expected_environment(profile),
        observed_stop_s=stop_s,
    )
    return UnitLintReport(unit, parsed.sources, stop_s, tuple(findings))


@dataclass(frozen=True, slots=True)
class UnitFile:
    """A unit's text as systemd has it, and how long its last stop took (None: unknown)."""

    name: str
    text: str
    stop_s: float | None


async def read_unit_file(host: Host, profile: Profile) -> UnitFile:
    unit = profile.service.unit
    if not unit:
        raise ServedeckError(f"profile {profile.name}: [service] unit is not set: nothing to lint")
    text = await read_unit_text(host, unit)
    return UnitFile(unit, text, await read_stop_s(host, unit))
