"""Checkpoint bytes per component, exactly from safetensors headers or estimated from config.

Components differ in how a layout splits them (see SPLIT_RULES): attention and
dense MLP by TP, routed experts by EP (or TP without EP), embeddings
vocab-parallel, norms and routers replicated, MTP layers not loaded at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tui.plan.modelcfg import ModelArch
from tui.plan.safetensors import SafetensorsHeader

EMBED = "embed"
LM_HEAD = "lm_head"
ATTENTION = "attention"
ATTENTION_REPLICATED = "attention (replicated)"
DENSE_MLP = "dense mlp"
ROUTED_EXPERTS = "routed experts"
SHARED_EXPERTS = "shared experts"
ROUTER = "router"
NORMS = "norms"
VISION = "vision"
MTP = "mtp"
OTHER = "other"

# How each component is divided over the GPUs of one model replica.
SPLIT_RULES: dict[str, str] = {
    EMBED: "tp",  # vocab-parallel
    LM_HEAD: "tp",  # vocab-parallel
    ATTENTION: "tp",
    ATTENTION_REPLICATED: "replicated",  # MLA q_a/kv_a down-projections, DSA indexer
    DENSE_MLP: "tp",
    ROUTED_EXPERTS: "ep",  # EP when enabled, else TP
    SHARED_EXPERTS: "tp",
    ROUTER: "replicated",
    NORMS: "replicated",
    VISION: "replicated",
    MTP: "not loaded",  # speculative-decoding layers, skipped unless MTP is enabled
    OTHER: "replicated",  # unknown tensors: assume the worst
}
COMPONENT_ORDER = tuple(SPLIT_RULES)


@dataclass(frozen=True, slots=True)
class WeightBreakdown:
    """Checkpoint bytes by component.

    source: "safetensors" (exact), "estimate" (architecture only), or
    "estimate scaled" (architecture shares scaled to a stated checkpoint size).
    """

    components: tuple[tuple[str, int], ...]
    source: str
    estimate_bytes: int = 0  # the unscaled architecture estimate, when estimated
    files: int = 0
    tensors: int = 0
    scale_bytes: int = 0  # quantization scales included in the components

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.components)

    def bytes_of(self, component: str) -> int:
        return dict(self.components).get(component, 0)


_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_VISION_WORDS = ("vision", "visual", "mm_projector", "multi_modal_projector")
_SCALE_WORDS = ("weight_scale", "scale_inv", "weight_zero_point", "weight_shape", "input_scale")


def classify_tensor(name: str, num_layers: int) -> str:
    """The component a tensor belongs to, from its name alone (scales follow their weight)."""
    lower = name.lower()
    if any(word in lower for word in _VISION_WORDS):
        return VISION
    layer = _LAYER.search(lower)
    if (layer and int(layer.group(1)) >= num_layers) or ".mtp" in lower or lower.startswith("mtp"):
        return MTP
    if "embed_tokens" in lower or lower.endswith("wte.weight"):
        return EMBED
    if lower.startswith("lm_head") or ".lm_head." in lower:
        return LM_HEAD
    segments = lower.split(".")
    if "gate" in segments or "e_score_correction_bias" in lower:
        return ROUTER
    if any("norm" in segment for segment in segments):
        return NORMS
    if "shared_expert" in lower:
        return SHARED_EXPERTS
    if ".experts." in lower:
        return ROUTED_EXPERTS
    if "self_attn" in lower or ".attention." in lower:
        if any(part in lower for part in ("q_a_proj", "kv_a_proj", "indexer")):
            return ATTENTION_REPLICATED
        return ATTENTION
    if ".mlp." in lower or "feed_forward" in lower:
        return DENSE_MLP
    return OTHER


def breakdown_from_headers(
    headers: Iterable[SafetensorsHeader], arch: ModelArch
) -> WeightBreakdown:
    """Exact bytes per component from every shard's tensors."""
    sums = dict.fromkeys(COMPONENT_ORDER, 0)
    files = tensors = scales = 0
    for header in headers:
        files += 1
        for tensor in header.tensors:
            tensors += 1
            sums[classify_tensor(tensor.name, arch.num_layers)] += tensor.size_bytes
            if any(word in tensor.name for word in _SCALE_WORDS):
                scales += tensor.size_bytes
    parts = tuple((name, size) for name, size in sums.items() if size)
    return WeightBreakdown(parts, "safetensors", files=files, tensors=tensors, scale_bytes=scales)


def _linear_bytes(arch: ModelArch, module: str, in_features: int, out_features: int) -> float:
    """Bytes of one linear weight (scales included) under the checkpoint's quantization."""
    params = in_features * out_features
    if arch.quant.covers(module):
        return params * arch.quant.bytes_per_param(in_features)
    return params * arch.unquantized_dtype_bytes


def _attention_bytes(arch: ModelArch, layer: int) -> tuple[float, float]:
    """(split by TP, replicated) bytes of one layer's attention."""
    h, n = arch.hidden_size, arch.num_attention_heads
    name = f"model.layers.{layer}.self_attn.%s"
    if arch.is_mla:
        qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        kv_lora = arch.kv_lora_rank or 0
        split = _linear_bytes(
            arch, name % "kv_b_proj", kv_lora, n * (arch.qk_nope_head_dim + arch.v_head_dim)
        )
        split += _linear_bytes(arch, name % "o_proj", n * arch.v_head_dim, h)
        replicated = _linear_bytes(
            arch, name % "kv_a_proj_with_mqa", h, kv_lora + arch.qk_rope_head_dim
        )
        if arch.q_lora_rank:
            replicated += _linear_bytes(arch, name % "q_a_proj", h, arch.q_lora_rank)
            split += _linear_bytes(arch, name % "q_b_proj", arch.q_lora_rank, n * qk)
        else:
            split += _linear_bytes(arch, name % "q_proj", h, n * qk)
        return split, replicated
    q, kv = n * arch.head_dim, arch.num_kv_heads * arch.head_dim
    split = _linear_bytes(arch, name % "q_proj", h, q) + 2 * _linear_bytes(
        arch, name % "k_proj", h, kv
    )
    return split + _linear_bytes(arch, name % "o_proj", q, h), 0.0


def _mlp_bytes(arch: ModelArch, prefix: str, inter: int) -> float:
    """gate, up and down projections of one SwiGLU MLP."""
    h = arch.hidden_size
    return 2 * _linear_bytes(arch, f"{prefix}.gate_proj", h, inter) + _linear_bytes(
        arch, f"{prefix}.down_proj", inter, h
    )


def _moe_layer(arch: ModelArch, layer: int) -> dict[str, float]:
    prefix = f"model.layers.{layer}.mlp"
    return {
        ROUTED_EXPERTS: arch.num_experts
        * _mlp_bytes(arch, f"{prefix}.experts.0", arch.moe_intermediate_size),
        SHARED_EXPERTS: _mlp_bytes(arch, f"{prefix}.shared_experts", arch.shared_intermediate_size)
        if arch.shared_intermediate_size
        else 0.0,
        ROUTER: arch.num_experts * arch.hidden_size * arch.unquantized_dtype_bytes,
    }


def estimate_breakdown(arch: ModelArch, stated_total_bytes: int | None = None) -> WeightBreakdown:
    """Per-component bytes from the architecture; scaled to stated_total_bytes when given."""
    dtype = arch.unquantized_dtype_bytes
    h = arch.hidden_size
    sums = dict.fromkeys(COMPONENT_ORDER, 0.0)
    sums[EMBED] = arch.vocab_size * h * dtype
    sums[LM_HEAD] = 0.0 if arch.tie_word_embeddings else arch.vocab_size * h * dtype
    norm_width = 2 * h + (arch.q_lora_rank or 0) + (arch.kv_lora_rank or 0)
    split, replicated = _attention_bytes(arch, 0)
    sums[ATTENTION] = arch.num_layers * split
    sums[ATTENTION_REPLICATED] = arch.num_layers * replicated
    sums[NORMS] = (arch.num_layers * norm_width + h) * dtype
    if arch.intermediate_size:
        sums[DENSE_MLP] = arch.dense_layers * _mlp_bytes(
            arch, "model.layers.0.mlp", arch.intermediate_size
        )
    if arch.is_moe:
        for name, size in _moe_layer(arch, arch.dense_layers).items():
            sums[name] = arch.moe_layers * size
    if arch.mtp_layers:
        layer = split + replicated + norm_width * dtype + 2 * h * h * dtype  # + eh_proj
        layer += sum(_moe_layer(arch, arch.num_layers).values()) if arch.is_moe else 0.0
        sums[MTP] = arch.mtp_layers * (layer + 2 * arch.vocab_size * h * dtype)
    sums[VISION] = arch.vision_params * dtype
    estimate = sum(sums.values())
    if not stated_total_bytes or estimate <= 0:
        parts = tuple((name, round(size)) for name, size in sums.items() if size)
        return WeightBreakdown(parts, "estimate", estimate_bytes=round(estimate))
    factor = stated_total_bytes / estimate
    scaled = [(name, round(size * factor)) for name, size in sums.items() if size]
    drift = stated_total_bytes - sum(size for _, size in scaled)  # rounding: keep the total exact
    biggest = max(range(len(scaled)), key=lambda i: scaled[i][1])
    scaled[biggest] = (scaled[biggest][0], scaled[biggest][1] + drift)
    return WeightBreakdown(tuple(scaled), "estimate scaled", estimate_bytes=round(estimate))
