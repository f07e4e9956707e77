"""Putting a plan together: read the model (over a Host), then evaluate every layout."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from tui.core.errors import HostError, ServedeckError
from tui.hosts.base import Host
from tui.plan.inventory import GIB, GpuInventory
from tui.plan.layout import (
    KV_DTYPES,
    LayoutResult,
    Plan,
    PlanSettings,
    candidate_layouts,
    evaluate_layout,
)
from tui.plan.modelcfg import ModelArch, ModelConfigError, parse_config_text
from tui.plan.rules import PlanFacts, layout_warnings, plan_warnings
from tui.plan.safetensors import CheckpointError, list_shards, read_headers
from tui.plan.weights import WeightBreakdown, breakdown_from_headers, estimate_breakdown


class PlanSettingsError(ServedeckError):
    """A plan setting out of range (exit code 2)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What was read about a model: its architecture and its bytes per component."""

    name: str
    arch: ModelArch
    weights: WeightBreakdown
    stated_checkpoint_bytes: int | None = None


def model_from_config(
    config_text: str | bytes, source: str, checkpoint_gib: float | None = None
) -> ModelFacts:
    """config.json text (+ a stated checkpoint size) -> ModelFacts by estimate."""
    if checkpoint_gib is not None and checkpoint_gib <= 0:
        raise PlanSettingsError(f"--checkpoint-gib must be more than 0, got {checkpoint_gib:g}")
    arch = parse_config_text(config_text, source)
    stated = int(checkpoint_gib * GIB) if checkpoint_gib else None
    base = posixpath.basename(source)
    if base == "config.json":
        name = posixpath.basename(posixpath.dirname(source)) or arch.name
    else:
        name = base.removesuffix(".json") or arch.name
    return ModelFacts(name, arch, estimate_breakdown(arch, stated), stated)


async def read_model_dir(host: Host, model_dir: str) -> ModelFacts:
    """A checkpoint folder on any Host: config.json plus every shard's header (no tensor data)."""
    config_path = posixpath.join(model_dir, "config.json")
    try:
        config_text = await host.read_file(config_path)
    except HostError as error:
        raise ModelConfigError(f"{config_path}: cannot read it ({error})") from None
    arch = parse_config_text(config_text, config_path)
    shards = await list_shards(host, model_dir)
    if not shards:
        raise CheckpointError(f"{model_dir}: no *.safetensors files next to config.json")
    headers = await read_headers(host, shards)
    name = posixpath.basename(model_dir.rstrip("/")) or arch.name
    return ModelFacts(name, arch, breakdown_from_headers(headers, arch))


def kv_dtype_bytes(arch: ModelArch, kv_cache_dtype: str) -> int:
    """Bytes per KV element: `auto` follows the checkpoint (its kv_cache_scheme, else its dtype)."""
    if kv_cache_dtype not in KV_DTYPES:
        choices = ", ".join(sorted(KV_DTYPES))
        raise PlanSettingsError(f"kv_cache_dtype {kv_cache_dtype!r} is not one of {choices}")
    if kv_cache_dtype == "auto":
        return 1 if arch.quant.fp8_kv_cache else arch.unquantized_dtype_bytes
    return KV_DTYPES[kv_cache_dtype]


def build_plan(model: ModelFacts, gpus: GpuInventory, settings: PlanSettings | None = None) -> Plan:
    """Every candidate layout for these GPUs, with verdicts, KV room and warnings."""
    settings = settings or PlanSettings()
    if not 0 < settings.gpu_memory_utilization <= 1:
        raise PlanSettingsError(
            f"gpu_memory_utilization must be in (0, 1], got {settings.gpu_memory_utilization:g}"
        )
    max_len = settings.max_model_len or model.arch.max_position_embeddings
    if not max_len or max_len < 1:
        raise PlanSettingsError(
            "config.json has no max_position_embeddings: give max_model_len (--max-model-len)"
        )
    dtype_bytes = kv_dtype_bytes(model.arch, settings.kv_cache_dtype)
    facts = PlanFacts(
        model.arch, gpus, settings, model.weights, dtype_bytes, model.stated_checkpoint_bytes
    )
    results: list[LayoutResult] = []
    for layout in candidate_layouts(gpus.count, model.arch.is_moe):
        result = evaluate_layout(
            model.arch, model.weights, gpus, settings, layout, max_len, dtype_bytes
        )
        results.append(_with_warnings(result, layout_warnings(facts, layout)))
    kv_words = "MLA latent, replicated per TP rank" if model.arch.is_mla else "GQA K+V"
    return Plan(
        model_name=model.name,
        arch=model.arch,
        gpus=gpus,
        settings=settings,
        max_model_len=max_len,
        kv_dtype_bytes=dtype_bytes,
        kv_cache=f"{kv_words}, {dtype_bytes} B per element",
        weights=model.weights,
        layouts=tuple(results),
        warnings=plan_warnings(facts),
    )


def _with_warnings(result: LayoutResult, hits: tuple) -> LayoutResult:
    from dataclasses import replace

    return replace(result, warnings=hits) if hits else result
