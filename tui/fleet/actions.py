"""Fleet actions on one host: restart or stop its unit, clean up its leftover GPU processes.

Each action is planned first (what will run, on which machine), confirmed by the
operator, and carried out only after the host is re-checked to be the same machine:
its `uname -n` and boot id are read when the plan is made and again just before
acting, so an alias that now points elsewhere, or a box that rebooted meanwhile, is
refused instead of acted on. Refusals (read-only, no unit, identity changed), requests
and outcomes go to the audit log through the same helpers the console uses
(tui.serving.unit.service's audited actions, tui.procs.kill's audited kills).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.ops.gpu_hints import deck_context, gpu_snapshot, rereader
from tui.procs.kill import kill_processes, leftovers, refuse_before_asking
from tui.procs.listing import list_gpu_processes
from tui.procs.model import GpuProcess, KillReport
from tui.serving.unit.service import (
    ActionOutcome,
    ServiceAction,
    audit_refusal,
    describe_action,
    perform_action,
)

SERVICE_VERBS = ("restart", "stop")
_IDENTITY_SCRIPT = 'uname -n; cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo "?"\n'


@dataclass(frozen=True, slots=True)
class HostIdentity:
    """The machine an action was confirmed for: its name and the boot it is in."""

    node: str
    boot_id: str

    @property
    def text(self) -> str:
        return f"{self.node} (boot {self.boot_id[:8]})"


@dataclass(frozen=True, slots=True)
class ServicePlan:
    host: str  # the fleet row's name
    action: ServiceAction
    identity: HostIdentity


@dataclass(frozen=True, slots=True)
class CleanupPlan:
    host: str
    host_label: str
    targets: tuple[GpuProcess, ...]
    refused: tuple[tuple[int, str], ...]
    identity: HostIdentity


class ReadOnlyRefused(ServedeckError):
    """The host's profile (or the fleet's --read-only) allows no change."""

    exit_code = 3


async def read_identity(deck: Deck) -> HostIdentity:
    """`uname -n` and the boot id, in one short session."""
    result = await deck.host.run(["/bin/sh", "-s"], timeout_s=15.0, stdin_text=_IDENTITY_SCRIPT)
    lines = result.stdout.strip().splitlines()
    if result.exit_status != 0 or len(lines) < 2:
        raise ServedeckError(f"{deck.host_label}: cannot read the host's identity")
    return HostIdentity(lines[0].strip(), lines[1].strip())


async def recheck_identity(
    deck: Deck, expected: HostIdentity, what: str, audit_path: Path | None = None
) -> None:
    """Raise (and audit) when the host is no longer the machine the operator confirmed."""
    try:
        now = await read_identity(deck)
    except ServedeckError as error:
        reason = f"identity not re-checked: {error}"
    else:
        if now == expected:
            return
        reason = f"host identity changed: confirmed {expected.text}, now {now.text}"
    append_audit("fleet.refused", deck.host_label, {"action": what, "reason": reason}, audit_path)
    raise ServedeckError(f"{deck.host_label}: {what} refused: {reason}")


def _refuse_read_only(deck: Deck, what: str, audit_path: Path | None) -> None:
    if deck.profile.read_only:
        append_audit(
            "fleet.refused", deck.host_label, {"action": what, "reason": "read-only"}, audit_path
        )
        raise ReadOnlyRefused(f"{deck.host_label}: read-only: {what} is disabled")


async def plan_service(
    name: str, deck: Deck, verb: str, *, audit_path: Path | None = None
) -> ServicePlan:
    """What `verb` would run on the host; refused (audited) when read-only or without a unit."""
    if verb not in SERVICE_VERBS:
        raise ServedeckError(f"unknown fleet action {verb!r} (expected one of {SERVICE_VERBS})")
    service = deck.profile.service
    unit = deck.systemd_unit
    if not unit:
        raise ServedeckError(f"{name}: no systemd unit in the profile; nothing to {verb}")
    action = describe_action(deck.host.label, unit, verb, use_sudo=service.use_sudo)
    if deck.profile.read_only:
        audit_refusal(action, "read-only mode", audit_path)
        raise ReadOnlyRefused(f"{deck.host_label}: read-only: {verb} {unit} is disabled")
    return ServicePlan(name, action, await read_identity(deck))


async def run_service(
    plan: ServicePlan, deck: Deck, *, confirmed: bool, audit_path: Path | None = None
) -> ActionOutcome:
    """Re-check the host, then the audited systemctl action (refused unless confirmed)."""
    if confirmed:
        await recheck_identity(deck, plan.identity, plan.action.verb, audit_path)
    service = deck.profile.service
    assert service.unit
    return await perform_action(
        deck.host,
        service.unit,
        plan.action.verb,
        confirmed=confirmed,
        read_only=deck.profile.read_only,
        use_sudo=service.use_sudo,
        audit_path=audit_path,
    )


async def plan_cleanup(name: str, deck: Deck, *, audit_path: Path | None = None) -> CleanupPlan:
    """The host's leftover GPU processes to offer; pid 1 and defunct ones refused up front."""
    _refuse_read_only(deck, "kill --leftovers", audit_path)
    identity = await read_identity(deck)
    listing = await list_gpu_processes(
        deck.host, await gpu_snapshot(deck), await deck_context(deck)
    )
    found = leftovers(listing.processes)
    allowed, refused = refuse_before_asking(
        deck.host_label,
        found,
        read_only=deck.profile.read_only,
        action="fleet kill --leftovers",
        audit_path=audit_path,
    )
    return CleanupPlan(
        name, deck.host_label, tuple(allowed), tuple(sorted(refused.items())), identity
    )


async def run_cleanup(
    plan: CleanupPlan,
    deck: Deck,
    *,
    timeout_s: float = 15.0,
    release_wait_s: float = 10.0,
    audit_path: Path | None = None,
) -> KillReport:
    """Re-check the host, then the killer (which re-checks each process's identity)."""
    await recheck_identity(deck, plan.identity, "kill --leftovers", audit_path)
    return await kill_processes(
        deck.host,
        plan.targets,
        await deck_context(deck),
        read_only=deck.profile.read_only,
        timeout_s=timeout_s,
        reread=rereader(deck),
        release_wait_s=release_wait_s,
        action="fleet kill --leftovers",
        audit_path=audit_path,
    )
