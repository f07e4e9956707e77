"""Layouts (TP, PP, DP, EP) -> verdicts with the arithmetic shown, and the KV cache math.

Every number that decides a verdict is also written out as a line of text, so an
operator can check it by hand before committing to a 30-minute load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tui.core import formatting
from tui.plan.inventory import GIB, GpuInventory
from tui.plan.lora import LoraSettings, lora_memory
from tui.plan.modelcfg import ModelArch
from tui.plan.weights import (
    ATTENTION,
    DENSE_MLP,
    EMBED,
    LM_HEAD,
    OTHER,
    ROUTED_EXPERTS,
    SHARED_EXPERTS,
    SPLIT_RULES,
    VISION,
    WeightBreakdown,
)

FITS, TOO_BIG, INVALID = "fits", "too big", "invalid"
KV_DTYPES = {"auto": 0, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "fp8": 1}
KV_DTYPES.update({"fp8_e4m3": 1, "fp8_e5m2": 1})
_FIRST_STAGE = (EMBED, VISION, OTHER)


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """What the operator would pass to the engine, plus servedeck's runtime reserve."""

    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None  # None: the config's max_position_embeddings
    kv_cache_dtype: str = "auto"
    reserve_bytes: int = 2 * GIB  # activation peak, NCCL and CUDA-graph buffers: an estimate
    lora: LoraSettings | None = None  # the unit's --enable-lora limits; None: no adapters


@dataclass(frozen=True, slots=True)
class Layout:
    tp: int
    pp: int = 1
    dp: int = 1
    ep: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def ep_size(self) -> int:
        return self.tp * self.dp if self.ep else 1

    @property
    def label(self) -> str:
        parts = [f"TP={self.tp}"]
        if self.pp > 1:
            parts.append(f"PP={self.pp}")
        if self.dp > 1:
            parts.append(f"DP={self.dp}")
        if self.ep:
            parts.append("EP")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Check:
    """One divisibility rule; `fatal` ones make a layout invalid when they fail."""

    name: str
    ok: bool
    arithmetic: str
    fatal: bool = True


@dataclass(frozen=True, slots=True)
class RuleHit:
    """A warning from the rule table (tui.plan.rules), with where its knowledge comes from."""

    rule_id: str
    severity: str  # "error" | "warning" | "info"
    message: str
    source: str


@dataclass(frozen=True, slots=True)
class LayoutResult:
    layout: Layout
    verdict: str  # FITS | TOO_BIG | INVALID
    reason: str  # one line: the failed check, or the memory arithmetic
    weight_bytes_per_gpu: int
    components_per_gpu: tuple[tuple[str, int], ...]
    budget_bytes_per_gpu: int
    kv_room_bytes_per_gpu: int  # negative when the weights do not fit
    kv_bytes_per_token_per_gpu: int
    max_tokens: int  # concurrent KV tokens, all replicas together
    full_length_requests: int
    checks: tuple[Check, ...]
    arithmetic: tuple[str, ...]
    warnings: tuple[RuleHit, ...] = ()
    lora_bytes_per_gpu: int = 0  # the adapters' slots (--max-loras), out of the KV room


@dataclass(frozen=True, slots=True)
class Plan:
    """The whole preflight: model x GPUs x settings -> one result per layout."""

    model_name: str
    arch: ModelArch
    gpus: GpuInventory
    settings: PlanSettings
    max_model_len: int
    kv_dtype_bytes: int
    kv_cache: str  # how the KV cache is laid out, in words
    weights: WeightBreakdown
    layouts: tuple[LayoutResult, ...]
    warnings: tuple[RuleHit, ...] = ()

    def find(self, tp: int, ep: bool = False, pp: int = 1, dp: int = 1) -> LayoutResult | None:
        return next((r for r in self.layouts if r.layout == Layout(tp, pp, dp, ep)), None)


def gib(size: float) -> str:
    """Plan sizes show two decimals (a fit is often decided by tenths of a GiB)."""
    return formatting.gib(size, 2)


def candidate_layouts(gpu_count: int, moe: bool) -> tuple[Layout, ...]:
    """TP in powers of two; PP or DP (with EP) only where they fill the box."""
    powers = [2**i for i in range(int(math.log2(gpu_count)) + 1)]
    eps = (False, True) if moe else (False,)
    layouts = [Layout(tp, 1, 1, ep) for tp in powers for ep in eps if not (ep and tp == 1)]
    for tp in powers:
        if gpu_count // tp > 1 and gpu_count % tp == 0:
            layouts += [Layout(tp, gpu_count // tp, 1, ep) for ep in eps if not (ep and tp == 1)]
            if moe:
                layouts.append(Layout(tp, 1, gpu_count // tp, True))
    return tuple(layouts)


def _block_check(name: str, total: int, ranks: int, unit: int | None, unit_name: str) -> Check:
    per_rank, remainder = divmod(total, ranks)
    if remainder:
        return Check(name, False, f"{name} {total} / TP {ranks} = {total / ranks:g}: not whole")
    if unit and per_rank % unit:
        return Check(
            name,
            False,
            f"{name} {total} / {ranks} = {per_rank}, not divisible by the {unit_name} {unit}",
        )
    tail = f" = {per_rank // unit} x {unit_name} {unit}" if unit else ""
    return Check(name, True, f"{name} {total} / {ranks} = {per_rank}{tail}")


def divisibility_checks(arch: ModelArch, layout: Layout) -> tuple[Check, ...]:
    """The checks engines run at load time, done up front (tensor widths per rank)."""
    tp, quant = layout.tp, arch.quant
    unit = quant.block_n if quant.method == "fp8" else quant.group_size
    unit_name = "FP8 block" if quant.method == "fp8" else "INT4 group"
    checks = [
        Check(
            "attention heads",
            arch.num_attention_heads % tp == 0,
            f"attention heads {arch.num_attention_heads} / {tp} = "
            f"{arch.num_attention_heads / tp:g}",
        )
    ]
    if not arch.is_mla:
        kv = arch.num_kv_heads
        ok = kv % tp == 0 if kv >= tp else tp % kv == 0
        how = f"{kv} / {tp} = {kv / tp:g}" if kv >= tp else f"{kv} KV heads replicated over {tp}"
        checks.append(Check("KV heads", ok, f"KV heads {how}"))
    if arch.intermediate_size:
        quantized = quant.covers("model.layers.0.mlp.down_proj")
        checks.append(
            _block_check(
                "dense intermediate",
                arch.intermediate_size,
                tp,
                unit if quantized else None,
                unit_name,
            )
        )
    if arch.is_moe and arch.shared_intermediate_size:
        quantized = quant.covers(f"model.layers.{arch.dense_layers}.mlp.shared_experts.down_proj")
        checks.append(
            _block_check(
                "shared expert intermediate",
                arch.shared_intermediate_size,
                tp,
                unit if quantized else None,
                unit_name,
            )
        )
    if arch.is_moe and layout.ep:
        size, experts = layout.ep_size, arch.num_experts
        even = experts % size == 0
        text = f"experts {experts} / EP {size} = {experts / size:g} per GPU, whole experts"
        checks.append(
            Check("experts per EP rank", even, text + ("" if even else " (uneven)"), False)
        )
    elif arch.is_moe:
        quantized = quant.covers(f"model.layers.{arch.dense_layers}.mlp.experts.0.down_proj")
        checks.append(
            _block_check(
                "expert intermediate",
                arch.moe_intermediate_size,
                tp,
                unit if quantized else None,
                unit_name,
            )
        )
    vocab_ok = arch.vocab_size % tp == 0
    checks.append(
        Check(
            "vocab",
            vocab_ok,
            f"vocab {arch.vocab_size} / {tp} = {arch.vocab_size / tp:g}"
            + ("" if vocab_ok else " (padded by the engine: fine)"),
            False,
        )
    )
    if layout.pp > 1:
        even = arch.num_layers % layout.pp == 0
        checks.append(
            Check(
                "layers per stage",
                even,
                f"layers {arch.num_layers} / PP {layout.pp} = {arch.num_layers / layout.pp:g}"
                + ("" if even else f" (largest stage {math.ceil(arch.num_layers / layout.pp)})"),
                False,
            )
        )
    return tuple(checks)


def kv_bytes_per_token(arch: ModelArch, dtype_bytes: int, tp: int, pp: int) -> tuple[int, str]:
    """KV cache bytes per token on one GPU, and the formula in words.

    MLA keeps one latent (kv_lora_rank + qk_rope_head_dim) per layer, replicated on
    every TP rank; GQA keeps K and V per KV head, split by TP while kv_heads >= TP.
    """
    layers = math.ceil(arch.num_layers / pp)
    if arch.is_mla:
        width = (arch.kv_lora_rank or 0) + arch.qk_rope_head_dim
        per_token = width * layers * dtype_bytes
        text = (
            f"MLA latent ({arch.kv_lora_rank} + {arch.qk_rope_head_dim}) x {layers} layers x "
            f"{dtype_bytes} B = {per_token:,} B/token, on every TP rank"
        )
        return per_token, text
    heads = max(1, arch.num_kv_heads // tp)
    per_token = 2 * heads * arch.head_dim * layers * dtype_bytes
    text = (
        f"GQA 2 x {heads} KV heads x {arch.head_dim} x {layers} layers x {dtype_bytes} B "
        f"= {per_token:,} B/token per GPU"
    )
    return per_token, text


def weights_per_gpu(
    weights: WeightBreakdown, arch: ModelArch, layout: Layout
) -> tuple[tuple[str, int], ...]:
    """Each component's bytes on the fullest GPU of the layout."""
    layer_share = math.ceil(arch.num_layers / layout.pp) / arch.num_layers
    stage = dict.fromkeys(SPLIT_RULES, 0)
    for name, size in weights.components:
        rule = SPLIT_RULES[name]
        if rule == "not loaded":
            continue
        if rule == "replicated":
            share = 1.0
        elif rule == "ep" and layout.ep:
            share = math.ceil(arch.num_experts / layout.ep_size) / arch.num_experts
        else:
            share = 1.0 / layout.tp
        if name not in (EMBED, LM_HEAD, VISION, OTHER):
            share *= layer_share
        stage[name] = math.ceil(size * share)
    if layout.pp > 1:  # first stage holds embed/vision, last holds lm_head: keep the fuller
        first = sum(stage[n] for n in _FIRST_STAGE)
        if first >= stage[LM_HEAD]:
            stage[LM_HEAD] = 0
        else:
            for name in _FIRST_STAGE:
                stage[name] = 0
    return tuple((name, size) for name, size in stage.items() if size)


def evaluate_layout(
    arch: ModelArch,
    weights: WeightBreakdown,
    gpus: GpuInventory,
    settings: PlanSettings,
    layout: Layout,
    max_model_len: int,
    kv_dtype_bytes: int,
) -> LayoutResult:
    """One layout's verdict: invalid (a failed check), too big (memory), or fits."""
    checks = divisibility_checks(arch, layout)
    parts = weights_per_gpu(weights, arch, layout)
    weight = sum(size for _, size in parts)
    budget = int(gpus.memory_bytes * settings.gpu_memory_utilization)
    lora = None
    if settings.lora is not None:
        lora = lora_memory(arch, settings.lora, layout.tp, layout.pp, layout.ep_size)
    lora_bytes = lora.bytes_per_gpu if lora else 0
    room = budget - weight - lora_bytes - settings.reserve_bytes
    per_token, kv_text = kv_bytes_per_token(arch, kv_dtype_bytes, layout.tp, layout.pp)
    tokens_per_replica = max(0, room) // per_token if per_token else 0
    requests = (tokens_per_replica // max_model_len) * layout.dp
    lines = [f"{name}: {gib(size)} ({_split_words(name, layout)})" for name, size in parts]
    lines.append(f"weights per GPU = {gib(weight)}")
    lines.append(
        f"budget = {settings.gpu_memory_utilization:.2f} x {gib(gpus.memory_bytes)} = {gib(budget)}"
    )
    lines += lora.lines if lora else ()
    lora_term = f" - {gib(lora_bytes)} LoRA" if lora else ""
    lines.append(
        f"KV room = {gib(budget)} - {gib(weight)} weights{lora_term} - "
        f"{gib(settings.reserve_bytes)} reserve = {gib(room)}"
    )
    lines.append(f"KV per token: {kv_text}")
    lines.append(
        f"{gib(max(room, 0))} / {per_token:,} B = {tokens_per_replica:,} tokens per replica"
        f" x {layout.dp} = {tokens_per_replica * layout.dp:,}; "
        f"/ {max_model_len:,} = {requests} full-length request(s)"
    )
    failed = next((c for c in checks if c.fatal and not c.ok), None)
    if failed is not None:
        verdict, reason = INVALID, failed.arithmetic
    elif room <= 0:
        verdict = TOO_BIG
        reason = (
            f"{gib(weight)} weights{lora_term.replace('-', '+')} + "
            f"{gib(settings.reserve_bytes)} reserve > "
            f"{settings.gpu_memory_utilization:.2f} x {gib(gpus.memory_bytes)} = {gib(budget)}"
        )
    elif requests < 1:
        verdict = TOO_BIG
        reason = (
            f"KV room {gib(room)} holds {tokens_per_replica:,} tokens < max_model_len "
            f"{max_model_len:,}: the engine refuses to start (max_model_len <= "
            f"{tokens_per_replica:,} fits)"
        )
    else:
        verdict = FITS
        reason = (
            f"{gib(weight)} weights, {gib(room)} KV room = {tokens_per_replica * layout.dp:,} "
            f"tokens, {requests} x {max_model_len:,}-token requests"
        )
    return LayoutResult(
        layout=layout,
        verdict=verdict,
        reason=reason,
        weight_bytes_per_gpu=weight,
        components_per_gpu=parts,
        budget_bytes_per_gpu=budget,
        kv_room_bytes_per_gpu=room,
        kv_bytes_per_token_per_gpu=per_token,
        max_tokens=tokens_per_replica * layout.dp,
        full_length_requests=requests,
        checks=checks,
        arithmetic=tuple(lines),
        lora_bytes_per_gpu=lora_bytes,
    )


def _split_words(name: str, layout: Layout) -> str:
    rule = SPLIT_RULES[name]
    if rule == "replicated":
        words = "replicated"
    elif rule == "ep" and layout.ep:
        words = f"split by EP {layout.ep_size}"
    elif name in (EMBED, LM_HEAD):
        words = f"vocab-parallel / TP {layout.tp}"
    else:
        words = f"/ TP {layout.tp}"
    if layout.pp > 1 and name in (ATTENTION, DENSE_MLP, ROUTED_EXPERTS, SHARED_EXPERTS):
        words += f", largest of {layout.pp} stages"
    return words
