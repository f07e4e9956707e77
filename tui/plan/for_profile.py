"""The preflight plan for a profile's own layout, as the console and summary need it.

Once the engine's log states its KV cache, the profile's layout shows the engine's
figures. Reading the model and GPUs of a Deck for it is `tui.ops.plan`.
"""

from __future__ import annotations

from dataclasses import replace

from tui.core.config import Profile
from tui.plan.inventory import GIB
from tui.plan.layout import FITS, TOO_BIG, Layout, Plan, gib
from tui.serving.load.tracker import LoadFacts


def profile_layout(profile: Profile) -> Layout:
    model = profile.model
    return Layout(tp=model.tp, pp=model.pp, dp=model.dp, ep=model.ep)


def with_engine_kv(plan: Plan, layout: Layout, engine: LoadFacts | None) -> Plan:
    """The layout the engine runs, judged by the KV cache its log reports, not the estimate."""
    if engine is None or not engine.kv_cache_tokens:
        return plan
    tokens = engine.kv_cache_tokens
    requests = (tokens // plan.max_model_len) * layout.dp
    kv_bytes = int((engine.kv_cache_gib or 0.0) * GIB)
    measured = (
        f"engine log: {engine.kv_cache_gib or 0:.2f} GiB KV cache = {tokens:,} tokens per "
        f"replica (replaces the estimate)"
    )
    results = []
    for result in plan.layouts:
        if result.layout != layout:
            results.append(result)
            continue
        fits = tokens >= plan.max_model_len
        reason = (
            f"{measured}; {requests} x {plan.max_model_len:,}-token requests"
            if fits
            else f"{measured} < max_model_len {plan.max_model_len:,}"
        )
        results.append(
            replace(
                result,
                verdict=FITS if fits else TOO_BIG,
                reason=reason,
                kv_room_bytes_per_gpu=kv_bytes or result.kv_room_bytes_per_gpu,
                max_tokens=tokens * layout.dp,
                full_length_requests=requests,
                arithmetic=(*result.arithmetic, f"{measured}: {gib(kv_bytes)} per GPU"),
            )
        )
    return replace(plan, layouts=tuple(results))
