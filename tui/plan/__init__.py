"""Deployment preflight: will this model fit, and which TP/EP layouts are valid.

No Textual here: the plan is plain frozen dataclasses (Plan, LayoutResult) with
a Markdown rendering, usable from the CLI, the console and the state summary.

build.py: Putting a plan together: read the model (over a Host), then evaluate every layout
for_profile.py: The preflight plan for a profile's own layout, as the console and summary need it
inventory.py: The GPUs a plan is made for: stated on the command line or taken from a live snapshot
lora.py: LoRA adapters' GPU memory: the slots vLLM allocates for --max-loras at --max-lora-rank
layout.py: Layouts (TP, PP, DP, EP) -> verdicts with the arithmetic shown, and the KV cache math
modelcfg.py: config.json -> ModelArch: the facts a deployment plan needs, in one frozen dataclass
render.py: Markdown and JSON renderings of a Plan (the state summary embeds the Markdown)
rules.py: The warning rule table: small, each rule with the source of what it knows
safetensors.py: Safetensors headers over any Host: exact tensor names, shapes, dtypes and byte sizes
weights.py: Checkpoint bytes per component, exactly from safetensors headers or estimated from config
"""

from tui.plan.build import (
    ModelFacts,
    PlanSettingsError,
    build_plan,
    model_from_config,
    read_model_dir,
)
from tui.plan.inventory import (
    GpuInventory,
    GpuInventoryError,
    inventory_from_nvidia_smi,
    inventory_from_snapshot,
    stated_inventory,
)
from tui.plan.layout import FITS, INVALID, TOO_BIG, Layout, LayoutResult, Plan, PlanSettings
from tui.plan.modelcfg import ModelArch, ModelConfigError, parse_config, parse_config_text
from tui.plan.safetensors import CheckpointError

__all__ = [
    "FITS",
    "INVALID",
    "TOO_BIG",
    "CheckpointError",
    "GpuInventory",
    "GpuInventoryError",
    "Layout",
    "LayoutResult",
    "ModelArch",
    "ModelConfigError",
    "ModelFacts",
    "Plan",
    "PlanSettings",
    "PlanSettingsError",
    "build_plan",
    "inventory_from_nvidia_smi",
    "inventory_from_snapshot",
    "model_from_config",
    "parse_config",
    "parse_config_text",
    "read_model_dir",
    "stated_inventory",
]
