"""Multi-node deployments in the fleet: one group row over its hosts, the members beneath.

A data-parallel deployment over several hosts (`vllm serve --data-parallel-size N` on the
head, `--headless` ranks on the others) is one service: the operator asks "is kimi up",
not "is node1 up". Profiles name it (`[deployment] name`, `headless`); the group row sums
the members' GPUs (the headless hosts' included), takes the serving figures from the
hosts with an API server, and is "degraded" when any member is down: one lost rank host
stops the whole DP group's collectives however healthy the head's /health looks.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.fleet.model import FleetRow
from tui.fleet.view import host_state

GROUP_PREFIX = "deployment:"
_DOWN_STATES = ("unreachable", "slow", "stale", "failed", "stalled", "stopped")


def group_key(name: str) -> str:
    """The group row's host key: never a host's name (a profile may share the deployment's)."""
    return f"{GROUP_PREFIX}{name}"


def head_host(rows: Sequence[FleetRow], key: str) -> str | None:
    """The host with the API server of the deployment whose group row is `key`, else None."""
    if not key.startswith(GROUP_PREFIX):
        return None
    name = key.removeprefix(GROUP_PREFIX)
    members = [row for row in rows if row.deployment == name and not row.members]
    heads = [row for row in members if not row.headless] or members
    return heads[0].host if heads else None


def member_down(row: FleetRow, state: str) -> str | None:
    """Why this member takes its deployment down (`state` is its host_state), or None."""
    if state in _DOWN_STATES:
        return state
    if row.headless and row.unit_state != "active":
        return f"unit {row.unit_state or 'unknown'}"  # ranks answer no /health: the unit says
    return None


def _sum(values: Sequence[float | int | None]) -> float | None:
    """The members' total, or None (unknown) if any member's part is unknown: a partial sum
    shown as the deployment's would be a guess (8 GPUs for a 16-GPU deployment)."""
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def group_row(name: str, members: Sequence[FleetRow], states: Sequence[str]) -> FleetRow:
    """The deployment's row: the head's serving state, every member's GPUs, members down."""
    heads = [row for row in members if not row.headless] or list(members)
    head = heads[0]
    down = tuple(
        f"{row.host} {why}"
        for row, state in zip(members, states, strict=True)
        if (why := member_down(row, state)) is not None
    )
    gpus = _sum([row.gpu_count for row in members])
    alerts = (f"degraded: {', '.join(down)}",) if down else ()
    return FleetRow(
        host=group_key(name),
        reachable=any(row.reachable for row in members),
        source=head.source,
        label=f"{len(members)} hosts",
        unit_state=head.unit_state,
        phase=head.phase,
        eta_s=head.eta_s,
        health_ok=head.health_ok,
        progress=head.progress,
        progress_kind=head.progress_kind,
        running=_int(_sum([row.running for row in heads])),
        waiting=_int(_sum([row.waiting for row in heads])),
        kv_pct=head.kv_pct,
        gen_tok_s=_sum([row.gen_tok_s for row in heads]),
        gpu_count=_int(gpus),
        gpu_mem_used_bytes=_int(_sum([row.gpu_mem_used_bytes for row in members])),
        gpu_mem_total_bytes=_int(_sum([row.gpu_mem_total_bytes for row in members])),
        gpu_mem_used_pct_max=_max([row.gpu_mem_used_pct_max for row in members]),
        gpu_util_pct_max=_max([row.gpu_util_pct_max for row in members]),
        temp_c_max=_max([row.temp_c_max for row in members]),
        power_w=_sum([row.power_w for row in members]),
        leftovers=_int(_sum([row.leftovers for row in members])),
        alerts=alerts + tuple(a for row in members for a in row.alerts),
        deployment=name,
        members=tuple(row.host for row in members),
        members_down=down,
    )


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _max(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def grouped(shown: Sequence[FleetRow], every: Sequence[FleetRow]) -> list[FleetRow]:
    """`shown` (filtered and sorted) with each deployment's group row where its first shown
    member was, its shown members beneath; the group's figures come from `every` member."""
    out: list[FleetRow] = []
    placed: set[str] = set()
    for row in shown:
        name = row.deployment
        if name is None:
            out.append(row)
            continue
        if name in placed:
            continue
        placed.add(name)
        members = [r for r in every if r.deployment == name]
        out.append(group_row(name, members, [host_state(r) for r in members]))
        out += [r for r in shown if r.deployment == name]
    return out
