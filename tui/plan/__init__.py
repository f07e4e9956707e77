"""Deployment preflight: will this model fit, and which TP/EP layouts are valid.

No Textual here: the plan is plain frozen dataclasses (Plan, LayoutResult) with
a Markdown rendering, usable from the CLI, the console and the state summary.
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
