"""Markdown for the flight recorder's parts of the summary: incidents, deployment attempts, the tune."""

from __future__ import annotations

from typing import Any

from tui.core.formatting import NA, duration_markdown
from tui.serving.load.waterfall import LOG_SPAN
from tui.summary.mdtable import clock, num, table


def recorded_incidents_lines(recorded: Any) -> list[str]:
    """What the recorder saw go wrong in the window; nothing without a recording."""
    if recorded is None:
        return []
    head = f"From the flight recorder, since {recorded.since_what} ({clock(recorded.since_s)}):"
    if not recorded.incidents:
        return [head, "", "No alerts, failures, lost connections or leftovers recorded.", ""]
    rows = [(i.time, i.event, i.text) for i in recorded.incidents]
    return [head, "", *table(["time", "kind", "what"], rows)]


def _phases(attempt: Any) -> str:
    if not attempt.phase_times:
        return "-"
    parts = [f"{phase} {duration_markdown(seconds)}" for phase, seconds in attempt.phase_times]
    total = sum(seconds for _, seconds in attempt.phase_times)
    return f"{duration_markdown(total)} ({', '.join(parts)})"


def _bench(attempt: Any) -> str:
    """The capacity answer, then the best complete run of each workload (partial runs never)."""
    parts = [f"capacity: {attempt.capacity}"] if attempt.capacity else []
    for figure in attempt.benchmarks:
        single = (
            f", {num(figure.single_stream_tok_s)} tok/s single stream"
            if figure.single_stream_tok_s
            else ""
        )
        parts.append(f"{figure.preset or figure.workload}: {figure.describe()}{single}")
    return "; ".join(parts) or "-"


def deployment_attempts_lines(recorded: Any) -> list[str]:
    """Every start of the service (at least the last 24 h): configuration diff, outcome, load
    time, best figures."""
    if recorded is None:
        return []
    out = ["## Deployment attempts", ""]
    if not recorded.attempts:
        return [*out, f"No service starts recorded since {recorded.attempts_since_what}.", ""]
    rows = [
        (
            str(n),
            clock(attempt.started_s),
            attempt.config_text,
            attempt.outcome,
            _phases(attempt),
            _bench(attempt),
        )
        for n, attempt in enumerate(recorded.attempts, start=1)
    ]
    return out + table(
        [
            "#",
            "started",
            "configuration (vs the attempt before)",
            "outcome",
            f"load time ({LOG_SPAN})",
            "best benchmark",
        ],
        rows,
    )


def tune_lines(recorded: Any) -> list[str]:
    """The last `servedeck tune` of the window: ranked table, Pareto front, winner, skips."""
    event = None if recorded is None else getattr(recorded, "tune", None)
    if event is None:
        return []
    data = event.data
    out = [
        "## Tune",
        "",
        f"`servedeck tune` finished at {clock(event.ts_s)}, "
        f"objective {data.get('objective', NA)}: {data.get('margin', NA)}.",
        "",
    ]
    rows = data.get("table") or []
    if rows:
        out += table(rows[0], rows[1:])
    front = data.get("pareto") or []
    if front:
        points = "; ".join(
            f"{p['name']} {num(p.get('per_user_tok_s'))} / {num(p.get('total_tok_s'), 0)}"
            for p in front
        )
        out += [f"Pareto front (per-user / total tok/s at capacity): {points}.", ""]
    for failed in data.get("failed") or []:
        out.append(f"- {failed['name']}: {failed['outcome']} at {failed.get('phase') or NA}: "
                   f"{failed.get('line') or NA}")  # fmt: skip
    for skip in data.get("skipped") or []:
        out.append(f"- {skip['name']}: {skip['outcome']}: {skip.get('reason') or NA}")
    for unproved in data.get("none_proved") or []:
        out.append(f"- {unproved['name']}: capacity none proved: {unproved.get('reason') or NA}")
    return [*out, ""] if out[-1] else out
