"""Unit lint: what in the serving unit lets leftovers and restart loops happen.

Reads `systemctl cat UNIT` (the unit file and its drop-ins, in order, each after a
`# /path` comment) and flags, each with the exact line to add or change:
KillMode=process/none and SendSIGKILL=no (systemd's control-group kill is what ends
every worker at a stop), a TimeoutStopSec shorter than the observed stop,
Restart=always without RestartSec/StartLimitBurst, an ExecStopPost that kills by name
at every stop (it reaches processes that are not the service's), low
LimitMEMLOCK/LimitNOFILE, and missing Environment= for the variables the profile
expects. Parsed by hand: unit files are not INI (keys repeat and accumulate, an
empty assignment resets a list), so configparser would lose exactly what matters.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

# systemd's defaults when a key is absent.
DEFAULT_TIMEOUT_STOP_S = 90.0
DEFAULT_RESTART_SEC_S = 0.1
MIN_NOFILE = 65536
LIST_KEYS = ("Environment", "EnvironmentFile", "ExecStopPost", "ExecStart", "ExecStartPre")
_TIME_UNITS = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "m": 60.0,
    "min": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
}
_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
# An ExecStopPost that ends processes by name or pattern, with no confirmation.
_KILL_BY_NAME = re.compile(r"\b(pkill|killall)\b|\bservedeck\b.*\bkill\b.*(--yes|\s-y\b)")


@dataclass(frozen=True, slots=True)
class UnitFinding:
    """One problem: which key, why it matters, and the exact line to put in which section."""

    key: str
    severity: str  # warn | fail
    problem: str
    section: str
    fix: str  # the exact line(s) to add or change

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class UnitFile:
    """The effective settings: last value per key, accumulated values for list keys."""

    name: str
    values: dict[tuple[str, str], str] = field(default_factory=dict)
    lists: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    def get(self, section: str, key: str) -> str | None:
        return self.values.get((section, key))

    def all(self, section: str, key: str) -> tuple[str, ...]:
        return self.lists.get((section, key), ())


def parse_unit(name: str, text: str) -> UnitFile:
    """`systemctl cat` output (or one unit file) to its effective settings."""
    values: dict[tuple[str, str], str] = {}
    lists: dict[tuple[str, str], list[str]] = {}
    sources: list[str] = []
    section = ""
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("# /"):
            sources.append(line[2:].strip())
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key in LIST_KEYS:
            if value:
                lists.setdefault((section, key), []).append(value)
            else:
                lists[(section, key)] = []  # an empty assignment resets the list
        values[(section, key)] = value
    return UnitFile(name, values, {k: tuple(v) for k, v in lists.items()}, tuple(sources))


def parse_timespan_s(value: str) -> float | None:
    """systemd time span ("90", "90s", "2min 30s", "infinity") in seconds; None if unreadable."""
    value = value.strip().lower()
    if value in ("infinity", ""):
        return float("inf") if value else None
    total = 0.0
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", value)
    if not parts or re.sub(r"[\d.\sa-z]", "", value):
        return None
    for number, unit in parts:
        factor = _TIME_UNITS.get(unit or "s")
        if factor is None:
            return None
        total += float(number) * factor
    return total


def parse_limit(value: str) -> float | None:
    """A resource limit ("infinity", "64M", "1048576", "soft:hard") as its soft value."""
    soft = value.split(":", 1)[0].strip()
    if soft.lower() == "infinity":
        return float("inf")
    match = re.fullmatch(r"(\d+)\s*([KMGT]?)i?B?", soft, re.IGNORECASE)
    if not match:
        return None
    return float(int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])


def _environment_names(unit: UnitFile) -> set[str]:
    names: set[str] = set()
    for entry in unit.all("Service", "Environment"):
        for match in re.finditer(r'"([^"=]+)=|(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=', entry):
            names.add(match.group(1) or match.group(2))
    return names


def lint_unit(
    unit: UnitFile,
    *,
    expected_env: tuple[str, ...] = (),
    observed_stop_s: float | None = None,
) -> list[UnitFinding]:
    """Every finding for one unit; an empty list is a clean unit."""
    findings: list[UnitFinding] = []
    kill_mode = unit.get("Service", "KillMode")
    if kill_mode in ("process", "none"):
        findings.append(
            UnitFinding(
                "KillMode",
                "fail",
                f"KillMode={kill_mode} stops only the main process: vLLM's EngineCore and TP "
                "workers are left holding GPU memory",
                "Service",
                "KillMode=control-group",
            )
        )
    if (unit.get("Service", "SendSIGKILL") or "").lower() in ("no", "false", "0", "off"):
        findings.append(
            UnitFinding(
                "SendSIGKILL",
                "fail",
                "SendSIGKILL=no: a worker that ignores SIGTERM outlives the stop and keeps "
                "its GPU memory",
                "Service",
                "SendSIGKILL=yes",
            )
        )
    stop_text = unit.get("Service", "TimeoutStopSec")
    stop_s = parse_timespan_s(stop_text) if stop_text else DEFAULT_TIMEOUT_STOP_S
    if observed_stop_s is not None and stop_s is not None and stop_s < observed_stop_s:
        wanted = int(observed_stop_s * 1.5 + 0.999)
        shown = f"TimeoutStopSec={stop_text}" if stop_text else "no TimeoutStopSec (90 s)"
        findings.append(
            UnitFinding(
                "TimeoutStopSec",
                "warn",
                f"{shown} is shorter than the last observed stop ({observed_stop_s:.0f} s): "
                "systemd SIGKILLs mid-teardown and GPU memory may stay held",
                "Service",
                f"TimeoutStopSec={wanted}",
            )
        )
    restart = unit.get("Service", "Restart")
    if restart == "always":
        restart_sec = unit.get("Service", "RestartSec")
        restart_sec_s = parse_timespan_s(restart_sec) if restart_sec else DEFAULT_RESTART_SEC_S
        if restart_sec_s is None or restart_sec_s < 10:
            findings.append(
                UnitFinding(
                    "RestartSec",
                    "warn",
                    f"Restart=always with RestartSec={restart_sec or '100ms (default)'}: a "
                    "crashed engine is restarted before its workers let go of the GPU",
                    "Service",
                    "RestartSec=30",
                )
            )
        if unit.get("Unit", "StartLimitBurst") is None:
            findings.append(
                UnitFinding(
                    "StartLimitBurst",
                    "warn",
                    "Restart=always without StartLimitBurst: a start that fails on leftovers "
                    "loops for ever (each try loads weights for minutes)",
                    "Unit",
                    "StartLimitIntervalSec=1800\nStartLimitBurst=3",
                )
            )
    killers = [line for line in unit.all("Service", "ExecStopPost") if _KILL_BY_NAME.search(line)]
    if killers:
        findings.append(
            UnitFinding(
                "ExecStopPost",
                "warn",
                f"ExecStopPost={killers[0]} ends processes by name at every stop, unconfirmed, "
                "whoever's they are: remove it; KillMode=control-group ends every process of "
                "the unit's cgroup, and `servedeck kill --leftovers` ends the proven leftovers "
                "when asked",
                "Service",
                "ExecStopPost=\nKillMode=control-group",  # an empty ExecStopPost= resets the list
            )
        )
    memlock_text = unit.get("Service", "LimitMEMLOCK")
    memlock = parse_limit(memlock_text) if memlock_text else None
    if memlock != float("inf"):
        shown = f"LimitMEMLOCK={memlock_text}" if memlock_text else "no LimitMEMLOCK (8M default)"
        findings.append(
            UnitFinding(
                "LimitMEMLOCK",
                "warn",
                f"{shown}: NCCL and pinned host memory need unlimited locked memory",
                "Service",
                "LimitMEMLOCK=infinity",
            )
        )
    nofile_text = unit.get("Service", "LimitNOFILE")
    nofile = parse_limit(nofile_text) if nofile_text else None
    if nofile is None or nofile < MIN_NOFILE:
        shown = f"LimitNOFILE={nofile_text}" if nofile_text else "no LimitNOFILE (1024 soft)"
        findings.append(
            UnitFinding(
                "LimitNOFILE",
                "warn",
                f"{shown}: the API server runs out of sockets under load",
                "Service",
                "LimitNOFILE=1048576",
            )
        )
    have = _environment_names(unit)
    env_files = unit.all("Service", "EnvironmentFile")
    missing = [name for name in expected_env if name not in have]
    if missing:
        where = (
            f" (not in Environment=; EnvironmentFile= {', '.join(env_files)} may set them)"
            if env_files
            else ""
        )
        findings.append(
            UnitFinding(
                "Environment",
                "warn" if env_files else "fail",
                f"the profile expects {', '.join(missing)} in the unit's environment{where}",
                "Service",
                "\n".join(f"Environment={name}=..." for name in missing),
            )
        )
    return findings


def finding_lines(findings: list[UnitFinding]) -> list[str]:
    """Plain text: one problem per finding, then the line(s) to put in its section."""
    lines = []
    for finding in findings:
        lines.append(f"[{finding.severity.upper():<4}] {finding.key}: {finding.problem}")
        for fix in finding.fix.splitlines():
            lines.append(f"       [{finding.section}] {fix}")
    return lines


_STOP_RE = re.compile(r"^(\d+(?:\.\d+)?)\s.*?(Stopping|Stopped|Deactivated successfully)")


def observed_stop_s(journal_text: str) -> float | None:
    """The last stop's duration from `journalctl -u UNIT -o short-unix` (Stopping -> Stopped)."""
    stopping: float | None = None
    last: float | None = None
    for line in journal_text.splitlines():
        match = _STOP_RE.match(line.strip())
        if not match:
            continue
        stamp, word = float(match.group(1)), match.group(2)
        if word == "Stopping":
            stopping = stamp
        elif stopping is not None:
            last = stamp - stopping
            stopping = None
    return last
