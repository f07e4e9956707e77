"""A capacity search's result as a tune's figures: single stream, at capacity, their intervals."""

from __future__ import annotations

from typing import Any

from tui.bench.capacity.answer import bracket


def figures(result: dict[str, Any] | None) -> dict[str, Any]:
    """Single-stream and at-capacity figures from a capacity search's result."""
    if not result:
        return {}
    levels = result.get("levels") or []
    one = next((lv for lv in levels if lv.get("concurrency") == 1), None)
    capacity = result.get("capacity") or {}
    users = capacity.get("concurrency")
    _, above = bracket(result)
    at = next((lv for lv in levels if lv.get("concurrency") == users), None)
    total = capacity.get("output_tok_s")
    return {
        "single_stream_tok_s": one.get("per_user_tok_s") if one else None,
        "capacity_users": users if isinstance(users, int) else None,
        "total_tok_s": total,
        "per_user_tok_s": capacity.get("per_user_tok_s"),
        "capacity_users_above": above,
        "single_stream_tok_s_range": _interval(one),
        "total_tok_s_range": _scaled(_interval(at), at, total),
    }


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
