"""The preflight plan for a profile's own model and GPUs, as the console and summary need it."""

from __future__ import annotations

from importlib import resources

from tui.config import Profile
from tui.errors import ServedeckError
from tui.gpu.model import GpuBoxSnapshot
from tui.hosts.base import Host
from tui.plan.build import build_plan, model_from_config, read_model_dir
from tui.plan.inventory import inventory_from_snapshot
from tui.plan.layout import Layout, Plan, PlanSettings

DEMO_MODEL_CONFIG = "kimi-k2.5-config.json"


def profile_layout(profile: Profile) -> Layout:
    model = profile.model
    return Layout(tp=model.tp, pp=model.pp, dp=model.dp, ep=model.ep)


async def plan_for_profile(profile: Profile, host: Host, snapshot: GpuBoxSnapshot | None) -> Plan:
    """Read the model (headers over the Host, or the demo's packaged config) and plan it."""
    if snapshot is None:
        raise ServedeckError("no GPU inventory yet (the GPU source has not answered)")
    gpus = inventory_from_snapshot(snapshot)
    if profile.is_demo:
        text = resources.files("tui.sim").joinpath("data", DEMO_MODEL_CONFIG).read_text()
        model = model_from_config(
            text, f"{profile.model.path}/config.json", profile.model.checkpoint_gib
        )
    elif profile.model.path:
        model = await read_model_dir(host, profile.model.path)
    else:
        raise ServedeckError(f"profile {profile.name}: model.path is not set")
    settings = PlanSettings(max_model_len=profile.model.max_model_len)
    return build_plan(model, gpus, settings)
