"""The restart guard: no start or restart while the last run's leftovers are in the way.

vLLM's engine and TP workers survive a SIGKILLed API server; systemd restarts the
unit, and the new engine fails its KV-cache check, OOMs or finds its port taken with
no hint why. Before `start`/`restart` the guard lists the service's leftovers
(GPU holders, pattern orphans, port holders) and refuses while they hold more GPU
memory than a threshold or hold the service's port, naming each PID and its GiB.
`stop` is never guarded: stopping cannot make things worse.

The verdict is pure (`assess`); reading a Deck for it is `tui.ops.restart_guard`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.core.formatting import GIB, gib
from tui.procs.kill import leftovers
from tui.procs.model import GpuProcess, ProcListing

# Less than this held by leftovers cannot fail a new engine's KV-cache check on its own.
DEFAULT_THRESHOLD_BYTES = 1 * GIB
GUARDED_VERBS = ("start", "restart")


class GuardRefused(ServedeckError):
    """A start/restart refused because leftovers hold GPU memory or the port."""

    exit_code = 4


def holds_port(proc: GpuProcess) -> bool:
    return proc.pid_source == "port" or "holds port" in proc.reason


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """What the guard found: the leftovers, what they hold, and whether that blocks."""

    verb: str
    service: str
    host_label: str
    leftovers: tuple[GpuProcess, ...]
    threshold_bytes: int
    port: int | None = None

    @property
    def held_bytes(self) -> int:
        return sum(proc.gpu_memory_bytes or 0 for proc in self.leftovers)

    @property
    def port_holders(self) -> tuple[GpuProcess, ...]:
        return tuple(proc for proc in self.leftovers if holds_port(proc))

    @property
    def blocked(self) -> bool:
        if self.verb not in GUARDED_VERBS or not self.leftovers:
            return False
        return self.held_bytes > self.threshold_bytes or bool(self.port_holders)

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(proc.pid for proc in self.leftovers)

    def why(self) -> str:
        """One line: what is held, by how many leftovers."""
        parts = []
        if self.held_bytes > self.threshold_bytes:
            parts.append(f"{gib(self.held_bytes)} GPU memory")
        if self.port_holders:
            parts.append(f"port {self.port}")
        held = " and ".join(parts) or f"{gib(self.held_bytes)} GPU memory"
        if self.others:
            return f"{len(self.leftovers)} process(es) hold {held}"
        return f"{len(self.leftovers)} leftover process(es) of {self.service} hold {held}"

    @property
    def others(self) -> tuple[GpuProcess, ...]:
        """What is in the way without being proven the service's (a port holder)."""
        return tuple(proc for proc in self.leftovers if proc.klass != "leftover")

    def process_lines(self) -> list[str]:
        lines = []
        for proc in self.leftovers:
            memory = proc.gpu_memory_bytes
            held = gib(memory) if memory else "no GPU memory"
            port = f", port {self.port}" if holds_port(proc) else ""
            if proc.klass != "leftover":
                port += f", {proc.klass}"
            lines.append(f"pid {proc.pid} ({held}{port}): {proc.command[:80]} [{proc.reason}]")
        return lines

    def message(self) -> str:
        """The refusal, naming every PID and its GiB, with the way out first."""
        head = f"{self.host_label}: {self.verb} {self.service} refused: {self.why()}"
        body = "\n".join(f"  {line}" for line in self.process_lines())
        way_out = "  end them first: K in the console, or `servedeck kill --leftovers`"
        if self.others:
            pids = " ".join(str(proc.pid) for proc in self.others)
            way_out += (
                f"\n  not proven {self.service}'s, so never a leftover: pid {pids}; stop it "
                "yourself, or `servedeck kill PID` with the pid typed"
            )
        return f"{head}\n{body}\n{way_out}"


def assess(
    listing: ProcListing,
    verb: str,
    *,
    service: str,
    port: int | None,
    threshold_bytes: int = DEFAULT_THRESHOLD_BYTES,
) -> GuardVerdict:
    """The verdict for one listing (pure: tests and the console share it). A port holder is in
    the way whatever its class (a start would fail to bind), though K never offers it unless
    it is proven the service's."""
    found = leftovers(listing.processes)
    in_way = [proc for proc in listing.processes if holds_port(proc) and proc not in found]
    return GuardVerdict(
        verb=verb,
        service=service,
        host_label=listing.host_label,
        leftovers=(*found, *in_way),
        threshold_bytes=threshold_bytes,
        port=port,
    )


def refuse(verdict: GuardVerdict, audit_path: Path | None = None) -> GuardRefused:
    """Audit the refusal and return the error to raise."""
    append_audit(
        "service.refused",
        verdict.host_label,
        {
            "unit": verdict.service,
            "action": verdict.verb,
            "reason": "leftovers",
            "held_bytes": verdict.held_bytes,
            "port": verdict.port if verdict.port_holders else None,
            "pids": list(verdict.pids),
        },
        audit_path,
    )
    return GuardRefused(verdict.message())


def inactive_note(listing: ProcListing) -> str | None:
    """ "service inactive but N GiB held by leftovers", for status and doctor; None if not so."""
    if listing.unit_active is not False:
        return None
    found = leftovers(listing.processes)
    if not found:
        return None
    held = sum(proc.gpu_memory_bytes or 0 for proc in found)
    pids = ", ".join(str(proc.pid) for proc in found)
    return f"service inactive but {gib(held)} held by leftovers (pids {pids})"
