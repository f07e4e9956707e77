"""Every configuration through the Plan before anything starts.

A layout the Plan calls invalid or too big is skipped with its arithmetic ("TP=6: 64
heads / 6 ..."); the rest are ordered by their predicted load time: the load ETA's plan
for this host (the simulator's stated phases, else the median of earlier loads, else
defaults), scaled by each layout's weights per GPU against the profile's own layout,
since each rank reads its share of the checkpoint side by side.

A host with no GPU (a CPU build of vLLM) is its own case, never a made-up GPU: every
configuration runs unchecked ("no GPUs: layout not checked"), using no GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tui.core import paths
from tui.core.config import Profile
from tui.core.formatting import duration_compact
from tui.deck import Deck
from tui.plan.build import ModelFacts, kv_dtype_bytes
from tui.plan.for_profile import profile_layout
from tui.plan.inventory import GpuInventory, NoGpus
from tui.plan.layout import FITS, INVALID, Layout, LayoutResult, PlanSettings, evaluate_layout, gib
from tui.serving.load.eta import HISTORY_FILE, plan_for, simulator_plan
from tui.tune.space import TuneConfig, TuneSpace

UNCHECKED = "not checked"  # no GPUs on the host: the Plan has nothing to check a layout on


@dataclass(frozen=True, slots=True)
class PlannedConfig:
    """One configuration's verdict from the Plan, and its predicted load time."""

    config: TuneConfig
    layout: Layout
    verdict: str  # FITS | TOO_BIG | INVALID (tui.plan.layout) | UNCHECKED (no GPUs)
    reason: str  # the failed check or the memory arithmetic, one line
    kv_room_bytes_per_gpu: int | None
    weight_bytes_per_gpu: int | None
    predicted_load_s: float | None  # None: unknown

    @property
    def runnable(self) -> bool:
        return self.verdict in (FITS, UNCHECKED)

    @property
    def gpus(self) -> int:
        """The GPUs it uses: none on a host without any (its ranks are CPU processes)."""
        return 0 if self.verdict == UNCHECKED else self.layout.gpus


def config_layout(config: TuneConfig, profile: Profile) -> Layout:
    """The profile's layout with what the configuration changes."""
    base = profile_layout(profile)

    def number(flag: str, default: int) -> int:
        value = config.flag(flag)
        return value if isinstance(value, int) and not isinstance(value, bool) else default

    ep = config.flag("--enable-expert-parallel")
    return Layout(
        tp=number("--tensor-parallel-size", base.tp),
        pp=number("--pipeline-parallel-size", base.pp),
        dp=number("--data-parallel-size", base.dp),
        ep=ep if isinstance(ep, bool) else base.ep,
    )


def plan_settings(config: TuneConfig, profile: Profile) -> PlanSettings:
    gmu = config.flag("--gpu-memory-utilization")
    dtype = config.flag("--kv-cache-dtype")
    length = config.flag("--max-model-len")
    return PlanSettings(
        gpu_memory_utilization=float(gmu) if isinstance(gmu, float) else 0.9,
        max_model_len=length if isinstance(length, int) else profile.model.max_model_len,
        kv_cache_dtype=str(dtype) if isinstance(dtype, str) else "auto",
    )


def judge(
    config: TuneConfig, model: ModelFacts, gpus: GpuInventory, profile: Profile
) -> LayoutResult:
    """The Plan's verdict on this configuration's layout and memory settings."""
    settings = plan_settings(config, profile)
    layout = config_layout(config, profile)
    max_len = settings.max_model_len or model.arch.max_position_embeddings or 1
    result = evaluate_layout(
        model.arch,
        model.weights,
        gpus,
        settings,
        layout,
        max_len,
        kv_dtype_bytes(model.arch, settings.kv_cache_dtype),
    )
    if result.verdict == FITS and layout.gpus > gpus.count:
        return _over_gpus(result, gpus)
    return result


def _over_gpus(result: LayoutResult, gpus: GpuInventory) -> LayoutResult:
    words = f"{result.layout.label} needs {result.layout.gpus} GPUs, the host has {gpus.count}"
    return replace(result, verdict=INVALID, reason=words)


def plan_space(
    space: TuneSpace,
    model: ModelFacts,
    gpus: GpuInventory,
    profile: Profile,
    base_load_s: float | None,
) -> tuple[PlannedConfig, ...]:
    """Runnable configurations by predicted load time (unknown last), then the skipped."""
    base_weight = judge(TuneConfig("profile"), model, gpus, profile).weight_bytes_per_gpu
    planned = []
    for config in space.configs:
        result = judge(config, model, gpus, profile)
        predicted = None
        if base_load_s is not None and base_weight > 0 and result.verdict == FITS:
            predicted = base_load_s * result.weight_bytes_per_gpu / base_weight
        planned.append(
            PlannedConfig(
                config,
                result.layout,
                result.verdict,
                result.reason,
                result.kv_room_bytes_per_gpu if result.verdict == FITS else None,
                result.weight_bytes_per_gpu,
                predicted,
            )
        )
    runnable = [p for p in planned if p.runnable]
    runnable.sort(key=lambda p: (p.predicted_load_s is None, p.predicted_load_s or 0.0))
    return (*runnable, *(p for p in planned if not p.runnable))


def base_load_s(deck: Deck, model: str | None) -> float | None:
    """The load ETA's whole-load figure for this host: the box's own, else its history."""
    stated, shares = deck.stated_load_s, deck.stated_phase_shares()
    if stated is not None and shares is not None:
        return sum(simulator_plan(stated, shares).values())
    plan = plan_for(paths.data_dir() / HISTORY_FILE, deck.host_label, model)
    return sum(plan.seconds.values()) if plan.basis != "defaults" else None


def plan_without_gpus(
    space: TuneSpace, profile: Profile, base_load_s: float | None, why: str
) -> tuple[PlannedConfig, ...]:
    """A CPU box: each configuration runs unchecked; a load is predicted only for the
    profile's own layout (nothing scales another one without the Plan's arithmetic)."""
    base = profile_layout(profile)
    planned = []
    for config in space.configs:
        layout = config_layout(config, profile)
        predicted = base_load_s if layout == base else None
        reason = f"{why}: layout not checked"
        planned.append(PlannedConfig(config, layout, UNCHECKED, reason, None, None, predicted))
    planned.sort(key=lambda p: (p.predicted_load_s is None, p.predicted_load_s or 0.0))
    return tuple(planned)


async def plan_for_deck(deck: Deck, space: TuneSpace) -> tuple[PlannedConfig, ...]:
    """The Deck's model and GPUs (no start, no write): the tune's plan."""
    model = await deck.model_facts()
    base = base_load_s(deck, deck.profile.model.name)
    try:
        gpus = await deck.gpu_inventory()
    except NoGpus as error:
        return plan_without_gpus(space, deck.profile, base, str(error))
    return plan_space(space, model, gpus, deck.profile, base)


def plan_lines(planned: tuple[PlannedConfig, ...]) -> list[str]:
    """The dry run's text: what would run in which order, and what is skipped and why."""
    lines = []
    runnable = [p for p in planned if p.runnable]
    skipped = [p for p in planned if not p.runnable]
    lines.append(f"{len(runnable)} to run, by predicted load time; {len(skipped)} skipped")
    unchecked = next((p for p in runnable if p.verdict == UNCHECKED), None)
    if unchecked is not None:
        lines.append(f"  {unchecked.reason}")
    for n, item in enumerate(runnable, 1):
        load = (
            "unknown" if item.predicted_load_s is None else duration_compact(item.predicted_load_s)
        )
        room = gib(item.kv_room_bytes_per_gpu) if item.kv_room_bytes_per_gpu is not None else "?"
        where = (
            f"{item.layout.label}, no GPU"
            if item.verdict == UNCHECKED
            else f"{item.layout.label}, {item.gpus} GPUs, KV room {room}/GPU"
        )
        lines.append(f"{n:>3}. {item.config.name}  [{where}, load ~{load}]")
    for item in skipped:
        lines.append(f"  skip {item.config.name}: {item.verdict}: {item.reason}")
    return lines
