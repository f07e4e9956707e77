"""The preflight plan for a Deck's own model and GPUs.

One source of truth for the checkpoint size: the files themselves when they can
be read (shard headers over the Host, `Deck.model_facts`); for the demo, the
simulated checkpoint's own size (tui.sim.spec), never a number typed into a profile.
"""

from __future__ import annotations

from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.gpu.model import GpuBoxSnapshot
from tui.plan.build import build_plan
from tui.plan.for_profile import profile_layout, with_engine_kv
from tui.plan.inventory import inventory_from_snapshot
from tui.plan.layout import Plan, PlanSettings
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
    settings = PlanSettings(max_model_len=profile.model.max_model_len)
    return with_engine_kv(build_plan(model, gpus, settings), profile_layout(profile), engine)
