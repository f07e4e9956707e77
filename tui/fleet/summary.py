"""One Markdown summary of a whole fleet: a table of hosts, its multi-node deployments, then
a short section per host.

Built from the rows the pane shows (pure: no I/O), so the file says exactly what the
operator saw. Every free text (errors, routes, labels) goes through redaction, and a
cell never breaks the table (pipes escaped, one line) nor carries a control character (a
host name or label value with an escape sequence is written as `\\x1b`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from tui.core.formatting import printable
from tui.core.redact import redact_text
from tui.fleet.deployments import group_row
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state, summarize

_GIB = 1024**3
_HEADERS = (
    "Host",
    "State",
    "Unit",
    "Load",
    "Ready",
    "Run/wait",
    "KV %",
    "Gen tok/s",
    "GPUs",
    "GPU memory",
    "Hottest",
    "Power",
    "Leftovers",
    "Alerts",
)


def _cell(text: object) -> str:
    """One table cell: redacted, one line, controls escaped, pipes escaped; unknown is `n/a`."""
    if text is None or text == "":
        return "n/a"
    return printable(redact_text(" ".join(str(text).split()))).replace("|", "\\|")


def _num(value: float | int | None, fmt: str, unit: str = "") -> str | None:
    return None if value is None else f"{value:{fmt}}{unit}"


def load_text(row: FleetRow) -> str | None:
    """`weights 12/64, ready in ~6 min` or the phase alone."""
    if row.phase is None:
        return None
    text = row.phase
    if row.shards_total:
        text += f" {row.shards_done or 0}/{row.shards_total}"
    if row.eta_s is not None:
        text += f", ready in ~{max(1, round(row.eta_s / 60))} min"
    return text


def memory_text(row: FleetRow) -> str | None:
    if row.gpu_mem_total_bytes is None or row.gpu_mem_used_bytes is None:
        return None
    text = f"{row.gpu_mem_used_bytes / _GIB:.0f}/{row.gpu_mem_total_bytes / _GIB:.0f} GiB"
    if row.gpu_mem_used_pct_max is not None:
        text += f" (fullest {row.gpu_mem_used_pct_max:.0f} %)"
    return text


def _ready(row: FleetRow) -> str | None:
    return None if row.health_ok is None else ("yes" if row.health_ok else "no")


def _run_wait(row: FleetRow) -> str | None:
    if row.running is None and row.waiting is None:
        return None
    return f"{_num(row.running, 'd') or 'n/a'}/{_num(row.waiting, 'd') or 'n/a'}"


def _cells(row: FleetRow) -> list[str]:
    name = f"{row.host} ({row.label})" if row.label else row.host
    return [
        _cell(value)
        for value in (
            name,
            host_state(row),
            row.unit_state,
            load_text(row),
            _ready(row),
            _run_wait(row),
            _num(row.kv_pct, ".0f"),
            _num(row.gen_tok_s, ".0f"),
            row.gpu_count,
            memory_text(row),
            _num(row.temp_c_max, ".0f", " C"),
            _num(row.power_w, ".0f", " W"),
            row.leftovers,
            ", ".join(row.alerts) or "none",
        )
    ]


def _section(row: FleetRow) -> list[str]:
    lines = [f"## {_cell(row.host)}", ""]
    facts = [
        ("Label", row.label or None),
        ("Route", row.route or None),
        ("State", host_state(row)),
        ("Unit", row.unit_state),
        ("Load", load_text(row)),
        ("Answering", _ready(row)),
        ("Requests running/waiting", _run_wait(row)),
        ("KV cache", _num(row.kv_pct, ".0f", " %")),
        ("Generation", _num(row.gen_tok_s, ".0f", " tok/s")),
        ("GPUs", row.gpu_count),
        ("GPU memory", memory_text(row)),
        ("Busiest GPU", _num(row.gpu_util_pct_max, ".0f", " %")),
        ("Hottest GPU", _num(row.temp_c_max, ".0f", " C")),
        ("Power", _num(row.power_w, ".0f", " W")),
        ("Leftover GPU processes", row.leftovers),
        ("Alerts", ", ".join(row.alerts) or None),
        ("Error", row.error),
    ]
    lines += [f"- {key}: {_cell(value)}" for key, value in facts if value is not None]
    return [*lines, ""]


def deployment_lines(rows: Sequence[FleetRow]) -> list[str]:
    """`## Deployments`: each multi-node deployment as the pane groups it (one service over
    its hosts), its head, its members with their part and state, degraded naming the host."""
    members = [row for row in rows if row.deployment is not None and not row.members]
    names = list(dict.fromkeys(row.deployment for row in members if row.deployment))
    if not names:
        return []
    lines = ["## Deployments", ""]
    for name in names:
        mine = [row for row in members if row.deployment == name]
        group = group_row(name, mine, [host_state(row) for row in mine])
        heads = [row.host for row in mine if not row.headless]
        state = (
            f"degraded ({', '.join(group.members_down)})"
            if group.members_down
            else host_state(group)
        )
        parts = [
            f"{row.host} ({'headless ranks' if row.headless else 'head'}, {host_state(row)})"
            for row in mine
        ]
        lines += [
            f"### {_cell(name)}: {_cell(state)}",
            "",
            f"- Head: {_cell(', '.join(heads) or 'none: no host runs the API server')}",
            f"- Members: {_cell(', '.join(parts))}",
            f"- GPUs: {_cell(group.gpu_count)}",
            "",
        ]
    return lines


def fleet_markdown(rows: Sequence[FleetRow], title: str, now_s: float | None = None) -> str:
    """The whole fleet as Markdown: summary line, host table, deployments, one section per
    host."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(now_s))
    lines = [
        f"# Fleet {_cell(title)}",
        "",
        f"Taken {stamp}: {summarize(rows).line()}. `n/a`: not known (not zero).",
        "",
        "| " + " | ".join(_HEADERS) + " |",
        "|" + "---|" * len(_HEADERS),
    ]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in rows]
    lines.append("")
    lines += deployment_lines(rows)
    for row in rows:
        lines += _section(row)
    return "\n".join(lines).rstrip() + "\n"
