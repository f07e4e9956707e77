"""The typed results of servedeck's MCP tools: the output schema an agent is shown.

Each tool returns one of these; the SDK turns it into the tool's `outputSchema` and
validates every result against it (a key not declared here never reaches the client).
Where a section is the CLI's own `--json` shape, it travels whole as `dict[str, Any]`
under a named key, next to the few typed fields an agent acts on. Units are in names.
"""

from __future__ import annotations

from typing import Any

# pydantic (the SDK's schemas) refuses typing.TypedDict before Python 3.12
from typing_extensions import TypedDict


class HostIdentityResult(TypedDict):
    node: str
    boot_id: str  # what stop, restart and kill_leftovers must be given back


class StatusResult(TypedDict):
    profile: str
    host: str
    host_reachable: bool
    identity: HostIdentityResult | None  # None: not read (the error says why)
    unit_state: str | None  # systemd's active state; None: no unit, or unread
    load_phase: str | None  # None: no log lines read
    load_eta_s: float | None  # None: unknown (no ETA is ever guessed)
    load_progress_pct: float | None
    ready: bool  # /health answered
    serving: bool
    errors: list[str]
    report: dict[str, Any]  # `servedeck status --json`


class GpusResult(TypedDict):
    available: bool
    gpu_count: int
    error: str | None
    snapshot: dict[str, Any]  # `servedeck gpus --json`


class ProcessEntry(TypedDict):
    pid: int
    start_ticks: int  # with boot_id, the identity kill_leftovers re-checks
    boot_id: str
    klass: str  # service | leftover | suspect | defunct | foreign ...
    reason: str
    user: str
    start_time_s: float
    gpu_memory_bytes: int | None
    gpu_indices: list[int]
    command: str  # redacted


class ProcessesResult(TypedDict):
    host: str
    boot_id: str
    taken_at_s: float
    processes: list[ProcessEntry]
    leftover_pids: list[int]  # what kill_leftovers may end
    notes: list[str]


class LogTailResult(TypedDict):
    source: str | None  # the journal unit or the log file
    lines: list[str]


class LogSearchResult(TypedDict):
    source: str | None
    pattern: str
    scanned_lines: int
    matches: list[str]
    truncated: bool  # more lines matched than `limit`


class TimelineResult(TypedDict):
    recording: str
    events: list[dict[str, Any]]  # `servedeck timeline --json`: ts, kind, source, text, gpu
    truncated: bool  # older events were left out (the newest `limit` are kept)
    note: str  # rows skipped as unreadable, or ""


class HealthResult(TypedDict):
    verdict: str  # ok | warn | crit | unknown
    hardware: dict[str, Any]  # `servedeck health --json`
    interconnect: dict[str, Any]  # `servedeck doctor --interconnect --json`
    interconnect_problems: int | None  # findings of warning or worse; None: not checked


class PlanResult(TypedDict):
    model: str
    plan: dict[str, Any]  # `servedeck plan --json`


class HandoffResult(TypedDict):
    markdown: str
    missing: list[str]  # the parts that could not be collected


class BenchHistoryResult(TypedDict):
    host: str
    runs: list[dict[str, Any]]  # newest first, as the bench history stores them


class CapacityHistoryResult(TypedDict):
    host: str
    searches: list[dict[str, Any]]  # newest first, as the capacity history stores them


class BenchmarkResult(TypedDict):
    preset: str
    workload: str
    run_id: str
    summary: str
    result: dict[str, Any]  # the run, as the bench history stores it


class ServiceActionResult(TypedDict):
    verb: str
    unit: str
    ok: bool
    exit_status: int
    message: str


class KillEntry(TypedDict):
    pid: int
    start_ticks: int
    outcome: str  # terminated | killed | stuck | gone | refused | error
    detail: str
    freed_bytes: int | None


class KillResult(TypedDict):
    summary: str
    all_ended: bool
    outcomes: list[KillEntry]
