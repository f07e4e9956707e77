"""The preflight plan for a profile's own model and GPUs, as the console and summary need it.

One source of truth for the checkpoint size: the files themselves when they can
be read (shard headers over the Host, `Deck.model_facts`); for the demo, the
simulated checkpoint's own size (tui.sim.spec), never a number typed into a profile. Once the engine's
log states its KV cache, the profile's layout shows the engine's figures.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.gpu.model import GpuBoxSnapshot
from tui.plan.build import build_plan
from tui.plan.inventory import GIB, inventory_from_snapshot
from tui.plan.layout import FITS, TOO_BIG, Layout, Plan, PlanSettings, gib
from tui.serving.load.tracker import LoadFacts

if TYPE_CHECKING:
    from tui.deck import Deck


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


async def plan_for_deck(
    deck: Deck, snapshot: GpuBoxSnapshot | None, engine: LoadFacts | None = None
) -> Plan:
    """Read the model (Deck.model_facts: headers over the Host, or the demo's config) and plan it."""
    if snapshot is None:
        raise ServedeckError("no GPU inventory yet (the GPU source has not answered)")
    gpus = inventory_from_snapshot(snapshot)
    model = await deck.model_facts()
    profile = deck.profile
    settings = PlanSettings(max_model_len=profile.model.max_model_len)
    return with_engine_kv(build_plan(model, gpus, settings), profile_layout(profile), engine)
