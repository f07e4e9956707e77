"""The engine's ranks from /proc, through the process helper (in-process here, over SSH there)."""

from __future__ import annotations

from typing import Any

from tui.core.errors import ServedeckError
from tui.hosts.base import Host
from tui.procs.remote import run_helper
from tui.serving.progress.model import RankReading, RankSample

ENGINE_TITLES = ("VLLM::", "sglang::")


def reading_from(root_pid: int, answer: dict[str, Any]) -> RankReading:
    """The helper's answer as a RankReading: only the engine's titled processes when it has any
    (a resource tracker or a compile worker stopped is no rank stopped)."""
    samples = []
    for raw in answer.get("ranks") or ():
        try:
            samples.append(
                RankSample(
                    pid=int(raw["pid"]),
                    name=str(raw["name"]),
                    state=str(raw["state"]),
                    cpu_ticks=None if raw.get("cpu_ticks") is None else int(raw["cpu_ticks"]),
                    wchan=None if raw.get("wchan") is None else str(raw["wchan"]),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    titled = [s for s in samples if s.name.startswith(ENGINE_TITLES)]
    return RankReading(
        root_pid=root_pid,
        root_alive=bool(answer.get("root_alive")),
        ranks=tuple(titled or samples),
        clock_ticks=int(answer.get("clock_ticks") or 100),
    )


async def read_ranks(
    host: Host, root_pid: int | None, timeout_s: float = 10.0
) -> RankReading | None:
    """The ranks under the service's main pid; None (unknown) without a pid or a helper answer."""
    if not root_pid:
        return None
    try:
        answer = await run_helper(host, {"op": "ranks", "root_pid": root_pid}, timeout_s)
    except ServedeckError:
        return None
    return reading_from(root_pid, answer)
