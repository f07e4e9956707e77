"""servedeck's MCP server: its tools, their arguments and bounds, over one open Deck.

Read-only by default: the reading tools and the quick benchmark (refused when the profile
is read-only, as everywhere). `allow_actions` adds stop, restart and kill_leftovers; without
it, calling one answers why it is refused, audited. No tool runs an arbitrary command.
Each tool is one line: its work lives in tui.mcp.read_tools and tui.mcp.action_tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Annotated, Literal, TypeVar

from mcp.types import ToolAnnotations
from pydantic import Field

from tui.core.audit import append_audit
from tui.deck import Deck
from tui.mcp import action_tools as act
from tui.mcp import read_tools as read
from tui.mcp.answer import Answerer, OneLineServer
from tui.mcp.results import (
    BenchHistoryResult,
    BenchmarkResult,
    CapacityHistoryResult,
    GpusResult,
    HandoffResult,
    HealthResult,
    KillResult,
    LogSearchResult,
    LogTailResult,
    PlanResult,
    ProcessesResult,
    ServiceActionResult,
    StatusResult,
    TimelineResult,
)

T = TypeVar("T")

ACTION_TOOLS = ("stop", "restart", "kill_leftovers")
NOT_ALLOWED = "this server was started without --allow-actions (`servedeck mcp --allow-actions`)"
BENCH_TIMEOUT_S = 300.0

# The tools' annotations are read from this module's globals (the SDK evaluates them).
BootId = Annotated[str, Field(description="the boot id `status` reported (identity.boot_id)")]
Targets = Annotated[
    list[act.ProcessTarget],
    Field(min_length=1, max_length=64, description="pid and start_ticks as `processes` listed"),
]

READ = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
LOADS = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
CHANGES = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)

INSTRUCTIONS = (
    "servedeck's view of one LLM serving box (vLLM on GPUs): its unit, load and readiness, "
    "GPUs, GPU processes, the service log, recorded timeline, hardware health, deployment "
    "plan, hand-off summary and benchmark history. Unknown values are null, never guessed. "
    "stop, restart and kill_leftovers (when offered) take the boot id `status` reports and, "
    "for a process, the pid and start_ticks `processes` lists; a stale identity is refused."
)


def build_server(deck: Deck, *, allow_actions: bool) -> OneLineServer:
    """The MCP server of one open Deck (the caller opens and closes it)."""

    def audit_refused(tool: str, reason: str) -> None:
        append_audit("mcp.refused", deck.host_label, {"action": tool, "reason": reason})

    app = OneLineServer(
        "servedeck",
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        refused={} if allow_actions else dict.fromkeys(ACTION_TOOLS, NOT_ALLOWED),
        on_refused=audit_refused,
    )
    answer = Answerer(deck)
    _add_read_tools(app, deck, answer)
    if allow_actions:
        _add_action_tools(app, deck, answer)
    return app


def _add_read_tools(app: OneLineServer, deck: Deck, answer: Answerer) -> None:
    @app.tool(annotations=READ)
    async def status() -> StatusResult:
        """The unit, load phase and ETA, readiness, metrics and the host's boot id."""
        return await answer("status", read.status_result(deck))

    @app.tool(annotations=READ)
    async def gpus() -> GpusResult:
        """Every GPU: memory, utilization, temperature, power, PCIe and its processes."""
        return await answer("gpus", read.gpus_result(deck))

    @app.tool(annotations=READ)
    async def processes() -> ProcessesResult:
        """Every process holding GPU memory, classified: service, leftover, suspect, defunct
        or foreign, with the identity (boot id, pid, start ticks) kill_leftovers needs."""
        return await answer("processes", read.processes_result(deck))

    @app.tool(annotations=READ)
    async def log_tail(
        lines: Annotated[int, Field(ge=1, le=2000, description="how many lines")] = 100,
    ) -> LogTailResult:
        """The service log's last lines (the unit's journal or its log file), redacted."""
        return await answer("log_tail", read.log_tail_result(deck, lines))

    @app.tool(annotations=READ)
    async def log_search(
        pattern: Annotated[str, Field(min_length=1, max_length=200, description="fixed text")],
        limit: Annotated[int, Field(ge=1, le=500, description="most matches returned")] = 50,
        scan_lines: Annotated[int, Field(ge=1, le=50_000, description="lines searched")] = 5000,
    ) -> LogSearchResult:
        """The newest log lines holding `pattern` (any case, not a regex) among the last
        `scan_lines` lines."""
        return await answer("log_search", read.log_search_result(deck, pattern, limit, scan_lines))

    @app.tool(annotations=READ)
    async def timeline(
        since: Annotated[str | None, Field(description="'2h', '03:12', '2026-11-30 03:12'")] = None,
        kind: Annotated[str | None, Field(description="one kind of event only")] = None,
        limit: Annotated[int, Field(ge=1, le=2000, description="newest events kept")] = 200,
    ) -> TimelineResult:
        """What the flight recorder recorded about this host, oldest first."""
        work = asyncio.to_thread(read.timeline_result, deck, since, kind, limit)
        return await answer("timeline", work)

    @app.tool(annotations=READ)
    async def health() -> HealthResult:
        """Hardware health (XID events, ECC, row remaps, PCIe replays) and interconnect
        findings (P2P, ACS, IOMMU, BAR1, links, NUMA)."""
        return await answer("health", read.health_result(deck))

    @app.tool(annotations=READ)
    async def plan(
        model_dir: Annotated[str | None, Field(description="checkpoint folder on the host")] = None,
        gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9,
        max_model_len: Annotated[int | None, Field(ge=1)] = None,
        kv_cache_dtype: Literal["auto", "bf16", "fp8"] = "auto",
    ) -> PlanResult:
        """Will the model fit this box's GPUs, and which TP/PP/EP layouts are valid (default:
        the profile's model)."""
        work = read.plan_result(deck, model_dir, gpu_memory_utilization, max_model_len,
                                kv_cache_dtype)  # fmt: skip
        return await answer("plan", work)

    @app.tool(annotations=READ)
    async def handoff() -> HandoffResult:
        """The Markdown hand-off summary: hardware, software, model, load, benchmarks."""
        return await answer("handoff", read.handoff_result(deck))

    @app.tool(annotations=READ)
    async def bench_history(
        limit: Annotated[int, Field(ge=1, le=100)] = 8,
    ) -> BenchHistoryResult:
        """This host's saved benchmark runs, newest first."""
        work = asyncio.to_thread(read.bench_history_result, deck, limit)
        return await answer("bench_history", work)

    @app.tool(annotations=READ)
    async def capacity_history(
        limit: Annotated[int, Field(ge=1, le=100)] = 8,
    ) -> CapacityHistoryResult:
        """This host's saved capacity searches (users held under the SLO), newest first."""
        work = asyncio.to_thread(read.capacity_history_result, deck, limit)
        return await answer("capacity_history", work)

    @app.tool(annotations=LOADS)
    async def start_benchmark(
        timeout_s: Annotated[float, Field(gt=0, le=600)] = BENCH_TIMEOUT_S,
    ) -> BenchmarkResult:
        """Run the profile's quick benchmark preset against the server and wait for it
        (saved to the bench history, audited; refused when the profile is read-only)."""
        return await answer("start_benchmark", act.start_benchmark_result(deck, timeout_s))


def _add_action_tools(app: OneLineServer, deck: Deck, answer: Answerer) -> None:
    one_at_a_time = asyncio.Lock()

    async def acting(tool: str, work: Awaitable[T]) -> T:
        async with one_at_a_time:
            return await answer(tool, work)

    @app.tool(annotations=CHANGES)
    async def stop(boot_id: BootId) -> ServiceActionResult:
        """Stop the service's unit on the machine `boot_id` names (audited)."""
        return await acting("stop", act.service_result(deck, "stop", boot_id))

    @app.tool(annotations=CHANGES)
    async def restart(boot_id: BootId) -> ServiceActionResult:
        """Restart the unit; refused while leftovers hold GPU memory or the port (audited)."""
        return await acting("restart", act.service_result(deck, "restart", boot_id))

    @app.tool(annotations=CHANGES)
    async def kill_leftovers(
        boot_id: BootId,
        targets: Targets,
    ) -> KillResult:
        """End leftover GPU processes of the service (SIGTERM, wait, SIGKILL), each named by
        the pid and start_ticks `processes` listed; any mismatch refuses all (audited)."""
        return await acting("kill_leftovers", act.kill_result(deck, boot_id, targets))
