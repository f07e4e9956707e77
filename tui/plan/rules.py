"""The warning rule table: small, each rule with the source of what it knows.

A rule sees the plan's facts and, for layout rules, one layout; it returns a
message or None. Rules never change a verdict: they say what the numbers cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tui.plan.inventory import GpuInventory
from tui.plan.layout import Layout, PlanSettings, RuleHit, gib
from tui.plan.modelcfg import ModelArch
from tui.plan.weights import MTP, WeightBreakdown


@dataclass(frozen=True, slots=True)
class PlanFacts:
    arch: ModelArch
    gpus: GpuInventory
    settings: PlanSettings
    weights: WeightBreakdown
    kv_dtype_bytes: int
    stated_checkpoint_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    rule_id: str
    severity: str
    source: str
    check: Callable[[PlanFacts, Layout | None], str | None]
    per_layout: bool = False

    def hit(self, facts: PlanFacts, layout: Layout | None = None) -> RuleHit | None:
        message = self.check(facts, layout)
        return RuleHit(self.rule_id, self.severity, message, self.source) if message else None


def _tp_over_pcie(facts: PlanFacts, layout: Layout | None) -> str | None:
    if layout is None or layout.tp < 2 or facts.gpus.nvlink is not False:
        return None
    return (
        f"TP={layout.tp} without NVLink: every layer all-reduces over PCIe; on an 8-GPU "
        "PCIe box AllReduce took 51.5% of decode time, so fewer TP ranks (PP, or DP with EP) "
        "may decode faster"
    )


def _tp_spans_numa(facts: PlanFacts, layout: Layout | None) -> str | None:
    if layout is None or layout.tp < 2:
        return None
    nodes = {node for node in facts.gpus.numa_nodes[: layout.tp] if node is not None}
    if len(nodes) < 2:
        return None
    listed = " and ".join(str(node) for node in sorted(nodes))
    return (
        f"TP={layout.tp} spans NUMA nodes {listed}: its all-reduce crosses the CPU "
        "interconnect (SYS in `nvidia-smi topo -m`)"
    )


def _idle_gpus(facts: PlanFacts, layout: Layout | None) -> str | None:
    if layout is None or layout.gpus >= facts.gpus.count:
        return None
    idle = facts.gpus.count - layout.gpus
    return f"uses {layout.gpus} of {facts.gpus.count} GPUs; {idle} stay idle"


def _fp8_kv_mla_sm120(facts: PlanFacts, layout: Layout | None) -> str | None:
    cc = facts.gpus.compute_capability or ""
    if not (facts.arch.is_mla and cc.startswith("12") and facts.kv_dtype_bytes == 1):
        return None
    why = "kv_cache_dtype" if facts.settings.kv_cache_dtype.startswith("fp8") else "kv_cache_scheme"
    return (
        f"FP8 KV cache ({why}) with MLA on sm_{cc.replace('.', '')}: only TRITON_MLA runs "
        "there and it rejects FP8 KV; use an unquantized KV cache (and drop kv_cache_scheme)"
    )


def _unknown_architecture(facts: PlanFacts, layout: Layout | None) -> str | None:
    if facts.arch.known:
        return None
    return (
        f"unknown architecture {facts.arch.name} (model_type {facts.arch.model_type!r}): "
        "generic transformer estimate, check the split by hand"
    )


def _estimated(facts: PlanFacts, layout: Layout | None) -> str | None:
    weights = facts.weights
    if weights.source == "safetensors":
        return None
    if weights.source == "estimate":
        total = gib(weights.total_bytes)
        return f"no checkpoint size: weights estimated from the architecture ({total})"
    drift = weights.total_bytes / weights.estimate_bytes - 1 if weights.estimate_bytes else 0.0
    return (
        f"no safetensors headers: component shares estimated from the architecture "
        f"({gib(weights.estimate_bytes)}), scaled {drift:+.1%} to the stated "
        f"{gib(weights.total_bytes)}"
    )


def _mtp_not_loaded(facts: PlanFacts, layout: Layout | None) -> str | None:
    size = facts.weights.bytes_of(MTP)
    if not size:
        return None
    return (
        f"{gib(size)} of MTP layers in the checkpoint are not loaded unless MTP speculation is on"
    )


def _fp8_before_ada(facts: PlanFacts, layout: Layout | None) -> str | None:
    cc = facts.gpus.compute_capability
    if facts.arch.quant.method != "fp8" or not cc:
        return None
    try:
        major, minor = (int(part) for part in cc.split(".")[:2])
    except ValueError:
        return None
    if (major, minor) >= (8, 9):
        return None
    return (
        f"FP8 weights on sm_{major}{minor}: no FP8 tensor cores, weight-only FP8 (Marlin) is slower"
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "fp8-kv-mla-sm120",
        "error",
        "vLLM MLA backends: FlashMLA sm_90/100, FlashInfer-MLA and CUTLASS-MLA sm_100, "
        "FLASH_ATTN_MLA sm_90; TRITON_MLA (the one left on sm_120) has no FP8 KV "
        "(found on RTX PRO 6000 Blackwell)",
        _fp8_kv_mla_sm120,
    ),
    Rule(
        "unknown-architecture",
        "warning",
        "servedeck's modelled architectures (tui.plan.modelcfg.KNOWN_MODEL_TYPES)",
        _unknown_architecture,
    ),
    Rule("estimated-weights", "info", "servedeck estimate (tui.plan.weights)", _estimated),
    Rule(
        "mtp-not-loaded",
        "info",
        "vLLM DeepSeek-V3 loader skips num_nextn_predict_layers weights without speculation",
        _mtp_not_loaded,
    ),
    Rule(
        "fp8-before-ada",
        "warning",
        "vLLM docs, quantization hardware support: FP8 W8A8 needs sm_89+",
        _fp8_before_ada,
    ),
    Rule(
        "tp-over-pcie",
        "warning",
        "profile of Kimi-K2.5 INT4, vLLM TP=8 on 8x RTX PRO 6000 Blackwell (PCIe Gen5, no NVLink)",
        _tp_over_pcie,
        per_layout=True,
    ),
    Rule(
        "tp-spans-numa",
        "warning",
        "nvidia-smi topo -m legend: SYS = PCIe plus the SMP interconnect between NUMA nodes",
        _tp_spans_numa,
        per_layout=True,
    ),
    Rule("idle-gpus", "info", "layout arithmetic", _idle_gpus, per_layout=True),
)


def plan_warnings(facts: PlanFacts) -> tuple[RuleHit, ...]:
    hits = (rule.hit(facts) for rule in RULES if not rule.per_layout)
    return tuple(hit for hit in hits if hit)


def layout_warnings(facts: PlanFacts, layout: Layout) -> tuple[RuleHit, ...]:
    hits = (rule.hit(facts, layout) for rule in RULES if rule.per_layout)
    return tuple(hit for hit in hits if hit)
