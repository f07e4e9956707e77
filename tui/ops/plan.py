"""The preflight plan for a Deck's own model and GPUs.

One source of truth for the checkpoint size: the files themselves when they can
be read (shard headers over the Host, `Deck.model_facts`); for the demo, the
simulated checkpoint's own size (tui.sim.spec), never a number typed into a profile.
The LoRA adapters' slots come from the unit's own `ExecStart=` flags, as the engine
will read them.
"""

from __future__ import annotations

from dataclasses import replace

from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot
from tui.plan.build import build_plan
from tui.plan.for_profile import profile_layout, with_engine_kv
from tui.plan.inventory import inventory_from_snapshot
from tui.plan.layout import Plan, PlanSettings, RuleHit
from tui.plan.lora import LoraSettings, lora_from_unit
from tui.serving.load.tracker import LoadFacts


async def plan_for_deck(
    deck: Deck, snapshot: GpuBoxSnapshot | None, engine: LoadFacts | None = None
) -> Plan:
    """Read the model (Deck.model_facts: headers over the Host, or the demo's config) and plan it."""
    if snapshot is None:
        raise ServedeckError("no GPU inventory yet (the GPU source has not answered)")
    gpus = inventory_from_snapshot(snapshot)
    model = await deck.model_facts()
    profile = deck.profile
    lora, unread = await unit_lora(deck)
    settings = PlanSettings(max_model_len=profile.model.max_model_len, lora=lora)
    plan = build_plan(model, gpus, settings)
    if unread is not None:
        plan = replace(plan, warnings=(*plan.warnings, unread))
    return with_engine_kv(plan, profile_layout(profile), engine)


async def unit_lora(deck: Deck) -> tuple[LoraSettings | None, RuleHit | None]:
    """The unit's --enable-lora limits; a unit that cannot be read is said, never taken as none."""
    try:
        unit = await deck.unit_file()
    except ServedeckError as error:
        words = f"LoRA adapters' memory not counted: the unit's flags were not read ({error})"
        return None, RuleHit("lora-flags-unread", "info", words, "the unit (systemctl cat)")
    return lora_from_unit(unit.name, unit.text), None
