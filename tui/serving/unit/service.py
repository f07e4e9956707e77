"""The systemd unit that runs the server: its state, and start/stop/restart with consent.

State comes from `systemctl show -p ...` parsed as key=value (never by
position). Actions refuse in read-only mode and without an explicit
confirmation, and every request, refusal and outcome goes to the audit log.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.hosts.base import Host
from tui.hosts.reader import run_read

SHOW_PROPERTIES = (
    "Id",
    "Description",
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "MainPID",
    "ExecMainStartTimestamp",
    "StateChangeTimestamp",
    "ExecMainStatus",
    "ControlGroup",
    "NRestarts",
    "FragmentPath",
    "UnitFileState",
    "User",
    "WorkingDirectory",
    "ExecStart",
)
VERBS = ("start", "stop", "restart")


@dataclass(frozen=True, slots=True)
class UnitState:
    unit: str
    load_state: str
    active_state: str
    sub_state: str
    result: str
    main_pid: int | None
    started_at_s: float | None
    exit_status: int | None
    control_group: str | None
    n_restarts: int
    description: str = ""
    fragment_path: str | None = None
    unit_file_state: str | None = None
    # When ActiveState last changed (systemd's StateChangeTimestamp): "inactive since" is
    # the stop, not the last start.
    state_since_s: float | None = None
    # Who and where the service runs: User= ("" when unset: root), WorkingDirectory=
    # (None when unset) and ExecStart's program; the killer's proof that an orphan is its own.
    user: str = ""
    working_directory: str | None = None
    exec_path: str | None = None

    @property
    def since_s(self) -> float | None:
        """Since when the unit is in its current state (the start time only while it runs)."""
        if self.state_since_s is not None:
            return self.state_since_s
        return self.started_at_s if self.is_active else None

    @property
    def exists(self) -> bool:
        return self.load_state not in ("not-found", "")

    @property
    def is_active(self) -> bool:
        return self.active_state in ("active", "activating", "reloading")

    @property
    def is_failed(self) -> bool:
        return self.active_state == "failed"


_MAX_EPOCH_S = 253_402_300_800  # 10000-01-01: anything later is not a start time


def _timestamp_s(value: str) -> float | None:
    """`@1732897888` or `Sat 2026-11-29 16:31:28 UTC` to epoch seconds; empty/n/a is None."""
    value = value.strip()
    if not value or value == "n/a":
        return None
    if value.startswith("@"):
        try:
            seconds = float(value[1:])
        except ValueError:
            return None
        return seconds if math.isfinite(seconds) and 0 <= seconds < _MAX_EPOCH_S else None
    parts = value.split()
    if len(parts) >= 3:
        try:
            stamp = datetime.strptime(f"{parts[1]} {parts[2]}", "%Y-%m-%d %H:%M:%S")
            if len(parts) >= 4 and parts[3] == "UTC":
                return stamp.timestamp() + _utc_offset_s(stamp)
            return stamp.timestamp()
        except (ValueError, OverflowError, OSError):
            return None  # unreadable, or a year no clock here can hold
    return None


def _utc_offset_s(local_naive: datetime) -> float:
    """Seconds to add to a naive local reading of a UTC time."""
    return local_naive.astimezone().utcoffset().total_seconds()  # type: ignore[union-attr]


def _exec_path(value: str) -> str | None:
    """The program of `systemctl show`'s ExecStart={ path=/x/bin/vllm ; argv[]=... }."""
    match = re.search(r"\bpath=(\S+)", value)
    return match.group(1) if match else None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def parse_systemctl_show(unit: str, text: str) -> UnitState:
    """`systemctl show` output (KEY=VALUE lines, any order) to a UnitState."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value
    pid = _int(fields.get("MainPID"))
    return UnitState(
        unit=fields.get("Id") or unit,
        load_state=fields.get("LoadState", ""),
        active_state=fields.get("ActiveState", "unknown"),
        sub_state=fields.get("SubState", ""),
        result=fields.get("Result", ""),
        main_pid=pid if pid else None,
        started_at_s=_timestamp_s(fields.get("ExecMainStartTimestamp", "")),
        exit_status=_int(fields.get("ExecMainStatus")),
        control_group=fields.get("ControlGroup") or None,
        n_restarts=_int(fields.get("NRestarts")) or 0,
        description=fields.get("Description", ""),
        fragment_path=fields.get("FragmentPath") or None,
        unit_file_state=fields.get("UnitFileState") or None,
        state_since_s=_timestamp_s(fields.get("StateChangeTimestamp", "")),
        user=fields.get("User", ""),
        # "-" (missing is fine) and "!" are prefixes, not part of the path
        working_directory=fields.get("WorkingDirectory", "").lstrip("-!+") or None,
        exec_path=_exec_path(fields.get("ExecStart", "")),
    )


async def read_unit_state(host: Host, unit: str, systemctl: str = "systemctl") -> UnitState:
    argv = [systemctl, "show", unit, "--no-pager", "-p", ",".join(SHOW_PROPERTIES)]
    result = await run_read(host, argv, timeout_s=15.0)  # over SSH: no session per read
    if not result.ok:
        detail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ServedeckError(f"{host.label}: systemctl show {unit} failed: {detail}")
    return parse_systemctl_show(unit, result.stdout)


@dataclass(frozen=True, slots=True)
class ServiceAction:
    """What a confirmation dialog shows: where, which unit, the exact command."""

    host_label: str
    unit: str
    verb: str
    argv: tuple[str, ...]

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    action: ServiceAction
    ok: bool
    exit_status: int
    message: str
    duration_s: float


def describe_action(
    host_label: str, unit: str, verb: str, *, use_sudo: bool = False, systemctl: str = "systemctl"
) -> ServiceAction:
    if verb not in VERBS:
        raise ServedeckError(f"unknown service action {verb!r} (expected one of {VERBS})")
    argv = (*(("sudo", "-n") if use_sudo else ()), systemctl, verb, unit)
    return ServiceAction(host_label, unit, verb, argv)


ActionRunner = Callable[[ServiceAction], Awaitable[tuple[int, str, float]]]


def audit_refusal(action: ServiceAction, reason: str, audit_path: Path | None = None) -> None:
    """A refused start/stop/restart, in the audit log (CLI and console, read-only included)."""
    details = {"unit": action.unit, "action": action.verb, "command": action.command_line}
    append_audit("service.refused", action.host_label, {**details, "reason": reason}, audit_path)


async def audited_action(
    action: ServiceAction,
    runner: ActionRunner,
    *,
    confirmed: bool,
    read_only: bool,
    audit_path: Path | None = None,
) -> ActionOutcome:
    """Carry out a confirmed, allowed action through `runner`; audit request, outcome, refusal.

    `runner` returns (exit status, last message line, duration in seconds).
    """
    details = {"unit": action.unit, "action": action.verb, "command": action.command_line}
    if read_only or not confirmed:
        reason = "read-only mode" if read_only else "not confirmed"
        audit_refusal(action, reason, audit_path)
        raise ServedeckError(f"{action.host_label}: {action.verb} {action.unit} refused: {reason}")
    append_audit("service.request", action.host_label, details, audit_path)
    try:
        exit_status, message, duration_s = await runner(action)
    except ServedeckError as error:
        append_audit(
            "service.outcome",
            action.host_label,
            {**details, "ok": False, "error": str(error)},
            audit_path,
        )
        raise
    outcome = ActionOutcome(action, exit_status == 0, exit_status, message, duration_s)
    append_audit(
        "service.outcome",
        action.host_label,
        {**details, "ok": outcome.ok, "exit_status": exit_status, "message": message},
        audit_path,
    )
    return outcome


async def perform_action(
    host: Host,
    unit: str,
    verb: str,
    *,
    confirmed: bool,
    read_only: bool,
    use_sudo: bool = False,
    systemctl: str = "systemctl",
    timeout_s: float = 120.0,
    audit_path: Path | None = None,
) -> ActionOutcome:
    """Run start/stop/restart through systemctl on the host once confirmed and allowed."""

    async def run_systemctl(action: ServiceAction) -> tuple[int, str, float]:
        result = await host.run(list(action.argv), timeout_s=timeout_s)
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        return result.exit_status, lines[-1] if lines else "", result.duration_s

    action = describe_action(host.label, unit, verb, use_sudo=use_sudo, systemctl=systemctl)
    return await audited_action(
        action, run_systemctl, confirmed=confirmed, read_only=read_only, audit_path=audit_path
    )


@runtime_checkable
class ServiceController(Protocol):
    """What the console needs from a service: systemd here, the simulator's unit in the demo."""

    async def state(self) -> UnitState: ...

    async def start(self, *, confirmed: bool) -> ActionOutcome: ...

    async def stop(self, *, confirmed: bool) -> ActionOutcome: ...

    async def restart(self, *, confirmed: bool) -> ActionOutcome: ...


class SystemdService:
    """A systemd unit on a Host."""

    # Each state read runs `systemctl show` (a process here; over SSH one on the box, in the
    # host's long-lived reader, no channel): the console reads a steady unit less often.
    state_costs_a_command = True

    def __init__(
        self,
        host: Host,
        unit: str,
        *,
        use_sudo: bool = False,
        read_only: bool = False,
        systemctl: str = "systemctl",
    ) -> None:
        self.host = host
        self.unit = unit
        self.use_sudo = use_sudo
        self.read_only = read_only
        self.systemctl = systemctl

    def describe(self, verb: str) -> ServiceAction:
        return describe_action(
            self.host.label, self.unit, verb, use_sudo=self.use_sudo, systemctl=self.systemctl
        )

    async def state(self) -> UnitState:
        return await read_unit_state(self.host, self.unit, self.systemctl)

    async def _act(self, verb: str, confirmed: bool) -> ActionOutcome:
        return await perform_action(
            self.host,
            self.unit,
            verb,
            confirmed=confirmed,
            read_only=self.read_only,
            use_sudo=self.use_sudo,
            systemctl=self.systemctl,
        )

    async def start(self, *, confirmed: bool) -> ActionOutcome:
        return await self._act("start", confirmed)

    async def stop(self, *, confirmed: bool) -> ActionOutcome:
        return await self._act("stop", confirmed)

    async def restart(self, *, confirmed: bool) -> ActionOutcome:
        return await self._act("restart", confirmed)
