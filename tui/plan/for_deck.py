"""The preflight plan for a profile's own model and GPUs, as the console and summary need it.

One source of truth for the checkpoint size: the files themselves when they can
be read (shard headers over the Host); for the demo, the simulated checkpoint's
own size (tui.sim.spec), never a number typed into a profile. Once the engine's
log states its KV cache, the profile's layout shows the engine's figures.
"""

from __future__ import annotations

from dataclasses import replace

from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.gpu.model import GpuBoxSnapshot
from tui.hosts.base import Host
from tui.plan.build import ModelFacts, build_plan, model_from_config, read_model_dir
from tui.plan.inventory import GIB, inventory_from_snapshot
from tui.plan.layout import FITS, TOO_BIG, Layout, Plan, PlanSettings, gib
from tui.serving.loadwatch import LoadFacts


def profile_layout(profile: Profile) -> Layout:
    model = profile.model
    return Layout(tp=model.tp, pp=model.pp, dp=model.dp, ep=model.ep)


def demo_model_facts(profile: Profile) -> ModelFacts:
    """The simulated model: its packaged config.json and the simulated checkpoint's size."""
    from tui.sim import spec
    from tui.sim.facts import simulated_config_text

    gib_size = spec.MODEL_WEIGHTS_BYTES / GIB
    return model_from_config(simulated_config_text(), "Kimi-K2.5.json", gib_size)


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


async def plan_for_profile(
    profile: Profile,
    host: Host,
    snapshot: GpuBoxSnapshot | None,
    engine: LoadFacts | None = None,
) -> Plan:
    """Read the model (headers over the Host, or the demo's packaged config) and plan it."""
    if snapshot is None:
        raise ServedeckError("no GPU inventory yet (the GPU source has not answered)")
    gpus = inventory_from_snapshot(snapshot)
    if profile.is_demo:
        model = demo_model_facts(profile)
    elif profile.model.path:
        model = await read_model_dir(host, profile.model.path)
    else:
        raise ServedeckError(f"profile {profile.name}: model.path is not set")
    settings = PlanSettings(max_model_len=profile.model.max_model_len)
    return with_engine_kv(build_plan(model, gpus, settings), profile_layout(profile), engine)
