"""The capacity search on the Bench pane: the one-sentence answer and every level measured.

A pure view: it is handed the capacity process's events (the `bench
--capacity --json` shapes) and draws them, client, server and GPU figures
side by side; it computes nothing.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from tui.core.formatting import counted

# Short headers (every one fits its figures, so none is cut), in the order drawn.
_COLUMNS = (
    "users", "TTFT p99 ms", "ITL p99 ms", "tok/s/user", "out tok/s", "goodput/s",
    "run/wait", "KV peak", "preempt", "GPU", "W", "tok/J", "SLO",
)  # fmt: skip
# Which columns a narrow pane keeps first: the level and its verdict, then the SLO's figures.
_KEEP_ORDER = (0, 12, 1, 2, 3, 4, 5, 7, 9, 6, 10, 11, 8)
_GAP = 2  # cells between two columns


def _verdict(level: dict[str, Any]) -> Text:
    """A finished level meets or misses; one without a verdict is not a miss but unknown."""
    meets = level.get("meets_slo")
    if meets is None:
        return Text("unknown", style="dim")
    if meets:
        return Text("meets", style="bold green")
    if level.get("client_bound"):
        return Text("client-bound", style="bold yellow")  # the client's limit, not a miss
    if level.get("verdict") == "too few requests to decide":
        return Text("undecided: too few requests", style="bold yellow")
    return Text(f"miss: {level.get('limited_by') or 'partial'}", style="bold red")


def _measuring_row(event: dict[str, Any]) -> list[Text | str]:
    """The level in progress: its load, no figures yet, and no verdict before it ends."""
    rate = event.get("request_rate")
    load = f"{rate:g}/s" if rate is not None else str(event.get("concurrency", "?"))
    return [load, *(["-"] * (len(_COLUMNS) - 2)), Text("measuring", style="bold yellow")]


def _level_order(level: dict[str, Any]) -> tuple[float, float]:
    """Levels from the lightest load up: by request rate, else by users at once."""
    rate, users = level.get("request_rate"), level.get("concurrency")
    return (
        float(rate) if isinstance(rate, int | float) else -1.0,
        float(users) if isinstance(users, int | float) else 0.0,
    )


def _fitting(rows: list[list[Text | str]], headers: list[str], width: int) -> list[int]:
    """The columns (in drawing order) whose widest cell fits `width` cells, most needed first.

    A column that does not fit is left out whole rather than every header being cut.
    """
    widths = [
        max(Text(header).cell_len, *(Text(str(row[i])).cell_len for row in rows))
        for i, header in enumerate(headers)
    ]
    kept: list[int] = []
    used = -_GAP
    for index in _KEEP_ORDER:
        if width > 0 and kept and used + _GAP + widths[index] > width:
            continue
        kept.append(index)
        used += _GAP + widths[index]
    return sorted(kept)


def _level_row(level: dict[str, Any]) -> list[Text | str]:
    server, gpu = level.get("server") or {}, level.get("gpu") or {}
    verdict = _verdict(level)
    per_joule = gpu.get("tokens_per_joule")
    rate = level.get("request_rate")
    return [
        f"{rate:g}/s" if rate is not None else str(level["concurrency"]),
        f"{level['ttft_p99_ms']:,.0f}",
        f"{level['itl_p99_ms']:,.0f}",
        f"{level['per_user_tok_s']:,.1f}",
        f"{level['output_throughput']:,.0f}",
        f"{level.get('goodput', 0.0):,.2f}",
        f"{server['running_mean']:.1f}/{server['waiting_mean']:.1f}" if server else "-",
        f"{server['kv_usage_peak_pct']:.0f}%" if server else "-",
        f"{server['preemptions']:.0f}" if server else "-",
        f"{gpu['util_mean_pct']:.0f}%" if gpu else "-",
        f"{gpu['power_mean_w']:,.0f}" if gpu else "-",
        "-" if per_joule is None else f"{per_joule:.2f}",
        verdict,
    ]


class CapacityView(Static):
    """Answer line, progress and a table of levels for one capacity search."""

    DEFAULT_CSS = """
    CapacityView { height: auto; margin: 0 0 1 0; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self._status = Text("Capacity search starting...", style="dim")
        self._levels: list[dict[str, Any]] = []
        self._measuring: dict[str, Any] | None = None  # the level_start of the level running
        self._answer: Text | None = None
        self._notes: list[str] = []
        self.drawn: Group = Group(self._status)

    def show_event(self, event: dict[str, Any]) -> None:
        """Draw one event of the capacity process (start, level_start, level, result)."""
        kind = event.get("event")
        if kind == "start":
            scale = event.get("time_scale", 1.0)
            clock = f", fast clock x{scale:g}" if scale != 1.0 else ""
            self._status = Text(f"Capacity search against {event.get('model', '?')}{clock}")
            self._levels, self._answer, self._notes = [], None, []
            self._measuring = None
        elif kind == "level_start":
            self._measuring = event
            rate = event.get("request_rate")
            load = f"{rate:g} requests/s" if rate else _users(event["concurrency"]) + " at once"
            self._status = Text(f"measuring {load} ...", "bold")
        elif kind == "level":  # an extended level replaces its earlier measure
            step = _step(event["level"])
            self._levels = [lv for lv in self._levels if _step(lv) != step]
            self._levels.append(event["level"])
            self._measuring = None
        elif kind == "result":
            self.show_result(event["result"])
            return
        self._draw()

    def show_result(self, result: dict[str, Any]) -> None:
        self._measuring = None
        self._levels = list(result.get("levels", []))
        self._answer = Text(result["answer"], style="bold")
        state = "cancelled: finished levels kept" if result.get("partial") else "done"
        self._status = Text(f"Capacity {state}", style="dim")
        self._notes = []
        if result.get("time_scale", 1.0) != 1.0:
            self._notes.append(
                f"{result.get('simulated_s', 0):,.0f} s simulated in {result.get('wall_s', 0):,.0f} s"
            )
        self._draw()

    def show_uncertainty(self, bracket: str, spread: str, truth: str = "") -> None:
        """What the search proved (its bracket), on repeat the spread across searches, and
        the simulator's truth said against the bracket (inside it, or why outside)."""
        said = [f"proved {bracket}", *(text for text in (spread, truth) if text)]
        self._notes[:0] = said
        self._draw()

    def on_resize(self) -> None:
        """The columns kept depend on the width: draw again for the new one."""
        self._draw()

    def show_error(self, message: str) -> None:
        self._measuring = None
        self._status = Text(f"capacity: {message}", style="bold red")
        self._draw()

    def _draw(self) -> None:
        parts: list[Any] = [self._status]
        if self._answer is not None:
            parts.append(self._answer)
        notes = list(self._notes)
        if self._levels or self._measuring is not None:
            rows = [_level_row(level) for level in sorted(self._levels, key=_level_order)]
            if self._measuring is not None:
                rows.append(_measuring_row(self._measuring))
            by_rate = any(level.get("request_rate") is not None for level in self._levels) or (
                self._measuring is not None and self._measuring.get("request_rate") is not None
            )
            headers = ["req/s" if by_rate else "users", *_COLUMNS[1:]]
            kept = _fitting(rows, headers, self.size.width)
            table = Table(box=None, padding=(0, _GAP // 2), pad_edge=False, header_style="bold")
            for index in kept:
                name = headers[index]
                table.add_column(name, justify="left" if name == "SLO" else "right", no_wrap=True)
            for row in rows:
                table.add_row(*(row[index] for index in kept))
            parts.append(table)
            hidden = [headers[index] for index in range(len(headers)) if index not in kept]
            if hidden:
                notes.append(f"wider terminal shows {', '.join(hidden)}")
        if notes:
            parts.append(Text("; ".join(notes), style="dim"))
        self.drawn = Group(*parts)
        self.update(self.drawn)


def _users(concurrency: object) -> str:
    """'1 user', '31 users'; what is not a count is shown as it came."""
    return counted(concurrency, "user") if isinstance(concurrency, int) else f"{concurrency} users"


def _step(level: dict[str, Any]) -> Any:
    return level.get("search_step", level.get("concurrency"))
