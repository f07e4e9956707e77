"""A capacity search's result as a tune's figures: single stream, at capacity, their intervals."""

from __future__ import annotations

from typing import Any

from tui.bench.capacity.answer import bracket


def figures(result: dict[str, Any] | None) -> dict[str, Any]:
    """Single-stream and at-capacity figures from a capacity search's result.

    A figure the search did not measure is None; at-capacity figures are None when no
    level met the SLO (`capacity_none_proved` then says why), never 0.
    """
    if not result:
        return {}
    levels = result.get("levels") or []
    one = next((lv for lv in levels if lv.get("concurrency") == 1 and lv.get("measured")), None)
    low, above = bracket(result)
    unproved = result.get("none_proved") if low is None else None
    capacity = {} if low is None else (result.get("capacity") or {})
    users = capacity.get("concurrency")
    at = next((lv for lv in levels if lv.get("concurrency") == users), None)
    total = _number(capacity.get("output_tok_s"))
    return {
        "single_stream_tok_s": _number(one.get("per_user_tok_s")) if one else None,
        "capacity_users": users if isinstance(users, int) and users > 0 else None,
        "capacity_none_proved": str(unproved) if unproved else None,
        "total_tok_s": total,
        "per_user_tok_s": _number(capacity.get("per_user_tok_s")),
        "capacity_users_above": above,
        "single_stream_tok_s_range": _interval(one),
        "total_tok_s_range": _scaled(_interval(at), at, total),
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _interval(level: dict[str, Any] | None) -> tuple[float, float] | None:
    """A level's per-user tok/s interval (the capacity runner's, over its requests)."""
    pair = (level or {}).get("per_user_tok_s_interval")
    if isinstance(pair, list | tuple) and len(pair) == 2:
        return float(pair[0]), float(pair[1])
    return None


def _scaled(
    interval: tuple[float, float] | None, level: dict[str, Any] | None, total: Any
) -> tuple[float, float] | None:
    """The total's interval: the per-user interval's relative width (same users, same window)."""
    per_user = (level or {}).get("per_user_tok_s")
    if interval is None or not isinstance(total, int | float) or not per_user:
        return None
    return total * interval[0] / per_user, total * interval[1] / per_user


def level_line(level: dict[str, Any]) -> str:
    """`level 1: 268 tok/s, client-bound: ...`: a level's figure and verdict, unknown as such."""
    tok_s = level.get("output_throughput")
    figure = (
        f"{tok_s:.0f} tok/s"
        if isinstance(tok_s, int | float) and level.get("measured")
        else "tok/s unknown"
    )
    verdict = (
        str(level.get("client_bound"))
        if level.get("client_bound")
        else "met the SLO"
        if level.get("meets_slo")
        else f"missed: {level.get('limited_by') or 'partial'}"
    )
    return f"level {level.get('concurrency', '?')}: {figure}, {verdict}"


def capacity_words(measured: dict[str, Any]) -> str:
    """`12 users`, `none proved (why)` or `unknown` (no search ran)."""
    users, unproved = measured.get("capacity_users"), measured.get("capacity_none_proved")
    if users is not None:
        return f"{users} users"
    return f"none proved ({unproved})" if unproved else "unknown"
