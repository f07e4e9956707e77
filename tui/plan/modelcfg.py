"""config.json -> ModelArch: the facts a deployment plan needs, in one frozen dataclass.

Handles the layouts real checkpoints use: GQA and MLA attention, MoE under its
several key names (n_routed_experts, num_local_experts, num_experts), and
`quantization_config` at top level or nested in `text_config` (Kimi-K2.5).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tui.core.errors import ServedeckError


class ModelConfigError(ServedeckError):
    """A config.json that cannot be read or lacks a field the plan needs (exit code 2)."""

    exit_code = 2


# model_type values whose tensor layout the estimate models faithfully.
KNOWN_MODEL_TYPES = frozenset(
    {
        "deepseek_v2",
        "deepseek_v3",
        "kimi_k2",
        "kimi_k25",
        "glm_moe_dsa",
        "glm4_moe",
        "minimax_m2",
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen3",
        "qwen2_moe",
        "qwen3_moe",
    }
)

_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8_e4m3fn": 1}


@dataclass(frozen=True, slots=True)
class QuantScheme:
    """How the checkpoint's linear weights are stored.

    method: "none", "fp8" (block or per-channel FP8) or "int4" (grouped INT4).
    `unquantized` holds the config's skip list as given: plain module names or
    compressed-tensors "re:" regexes.
    """

    method: str = "none"
    block_n: int | None = None  # FP8 weight_block_size[0] (output dim)
    block_k: int | None = None  # FP8 weight_block_size[1] (input dim)
    group_size: int | None = None  # INT4 group along the input dim
    unquantized: tuple[str, ...] = ()
    label: str = "bf16"
    fp8_kv_cache: bool = False  # the checkpoint asks for an FP8 KV cache (kv_cache_scheme)

    def bytes_per_param(self, in_features: int | None = None) -> float:
        """Storage per weight element, scales included (fp32 per FP8 block, bf16 per group)."""
        if self.method == "fp8" and self.block_n and self.block_k:
            return 1.0 + 4.0 / (self.block_n * self.block_k)
        if self.method == "fp8":
            return 1.0 + (4.0 / in_features if in_features else 0.0)
        if self.method == "int4" and self.group_size:
            return 0.5 + 2.0 / self.group_size
        return 2.0

    def covers(self, module_name: str) -> bool:
        """Whether module_name is stored quantized (not matched by the skip list)."""
        if self.method == "none":
            return False
        segments = module_name.split(".")
        for entry in self.unquantized:
            if entry.startswith("re:"):
                if re.match(entry[3:], module_name):
                    return False
            elif entry == module_name or entry in segments or module_name.endswith("." + entry):
                return False
        return True


@dataclass(frozen=True, slots=True)
class ModelArch:
    """The architecture facts of one checkpoint; sizes in elements, not bytes."""

    name: str
    model_type: str
    known: bool
    hidden_size: int
    num_layers: int
    vocab_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int | None  # dense MLP; None when every layer is MoE
    dense_layers: int
    tie_word_embeddings: bool
    max_position_embeddings: int | None
    unquantized_dtype_bytes: int
    quant: QuantScheme
    # MLA (DeepSeek-V3 family); kv_lora_rank None means GQA/MHA.
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # MoE; num_experts 0 means a dense model.
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    shared_intermediate_size: int = 0
    mtp_layers: int = 0  # extra next-token-prediction layers stored in the checkpoint
    vision_params: int = 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def moe_layers(self) -> int:
        return self.num_layers - self.dense_layers if self.is_moe else 0


def _field(cfg: Mapping[str, Any], key: str, source: str, *, required: bool = True) -> Any:
    value = cfg.get(key)
    if value is None:
        if required:
            raise ModelConfigError(f"{source}: missing field {key!r}")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModelConfigError(f"{source}: field {key!r} should be a whole number, got {value!r}")
    return value


def parse_quantization(qcfg: Mapping[str, Any] | None, source: str) -> QuantScheme:
    """quantization_config -> QuantScheme (FP8 block/channel, INT4 group, or none)."""
    if not qcfg:
        return QuantScheme()
    if not isinstance(qcfg, Mapping):
        raise ModelConfigError(f"{source}: field 'quantization_config' should be an object")
    scheme = _scheme(qcfg, source)
    kv = qcfg.get("kv_cache_scheme") or qcfg.get("kv_cache_quant_algo")
    return replace(scheme, fp8_kv_cache=bool(kv))


def _scheme(qcfg: Mapping[str, Any], source: str) -> QuantScheme:
    method = str(qcfg.get("quant_method", ""))
    skip = tuple(str(x) for x in qcfg.get("modules_to_not_convert") or qcfg.get("ignore") or ())
    if method == "fp8":
        block = qcfg.get("weight_block_size")
        if block is not None and (
            not isinstance(block, list)
            or len(block) != 2
            or not all(isinstance(b, int) for b in block)
        ):
            raise ModelConfigError(
                f"{source}: quantization_config.weight_block_size should be [n, k], got {block!r}"
            )
        if block:
            return QuantScheme(
                "fp8", block[0], block[1], None, skip, f"fp8 block {block[0]}x{block[1]}"
            )
        return QuantScheme("fp8", unquantized=skip, label="fp8 per-channel")
    if method == "compressed-tensors":
        groups = qcfg.get("config_groups") or {}
        for group in groups.values() if isinstance(groups, Mapping) else ():
            weights = group.get("weights") or {} if isinstance(group, Mapping) else {}
            bits, kind = weights.get("num_bits"), weights.get("type")
            if kind == "int" and bits == 4:
                size = weights.get("group_size")
                return QuantScheme(
                    "int4", group_size=size, unquantized=skip, label=f"int4 group {size}"
                )
            if kind == "float" and bits == 8:
                block = weights.get("block_structure")
                if isinstance(block, list) and len(block) == 2:
                    return QuantScheme(
                        "fp8", block[0], block[1], None, skip, f"fp8 block {block[0]}x{block[1]}"
                    )
                return QuantScheme("fp8", unquantized=skip, label="fp8 per-channel")
        raise ModelConfigError(
            f"{source}: quantization_config: unsupported compressed-tensors scheme "
            "(servedeck plans INT4 groups and FP8)"
        )
    raise ModelConfigError(
        f"{source}: quantization_config.quant_method {method!r} is not supported "
        "(servedeck plans fp8 and compressed-tensors)"
    )


def _vision_params(vision: Mapping[str, Any] | None, text_hidden: int) -> int:
    """A rough count for a ViT tower plus its projector (replicated on every GPU)."""
    if not isinstance(vision, Mapping):
        return 0
    hidden = vision.get("vt_hidden_size") or vision.get("hidden_size") or 0
    inter = vision.get("vt_intermediate_size") or vision.get("intermediate_size") or 0
    layers = vision.get("vt_num_hidden_layers") or vision.get("num_hidden_layers") or 0
    if not all(isinstance(v, int) for v in (hidden, inter, layers)):
        return 0
    merge = vision.get("merge_kernel_size") or [1, 1]
    merged = hidden * (merge[0] * merge[1] if len(merge) == 2 else 1)
    return layers * (4 * hidden * hidden + 2 * hidden * inter) + merged * (merged + text_hidden)


def parse_config(data: Mapping[str, Any], source: str = "config.json") -> ModelArch:
    """A config.json object -> ModelArch; ModelConfigError names the file and field."""
    if not isinstance(data, Mapping):
        raise ModelConfigError(f"{source}: expected a JSON object at the top level")
    text = data.get("text_config")
    cfg: Mapping[str, Any] = text if isinstance(text, Mapping) else data
    where = f"{source} (text_config)" if cfg is not data else source
    model_type = str(data.get("model_type") or cfg.get("model_type") or "")
    archs = data.get("architectures") or cfg.get("architectures") or [model_type or "unknown"]
    hidden = _field(cfg, "hidden_size", where)
    layers = _field(cfg, "num_hidden_layers", where)
    heads = _field(cfg, "num_attention_heads", where)
    vocab = _field(cfg, "vocab_size", where)
    if not (hidden and layers and heads and vocab):
        raise ModelConfigError(f"{where}: hidden_size, num_hidden_layers, heads, vocab must be > 0")
    kv_heads = _field(cfg, "num_key_value_heads", where, required=False) or heads
    head_dim = _field(cfg, "head_dim", where, required=False) or hidden // heads
    qcfg = cfg.get("quantization_config") or data.get("quantization_config")
    quant = parse_quantization(qcfg, source)
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or data.get("dtype") or "bfloat16")
    experts = 0
    for key in ("n_routed_experts", "num_local_experts", "num_experts"):
        experts = _field(cfg, key, where, required=False) or experts
        if experts:
            break
    inter = _field(cfg, "intermediate_size", where, required=False)
    moe_inter = _field(cfg, "moe_intermediate_size", where, required=False)
    dense_layers = layers
    shared = 0
    if experts:
        if not moe_inter:  # MiniMax / Mixtral: intermediate_size is the expert's
            moe_inter, inter = inter, None
        if moe_inter is None:
            raise ModelConfigError(f"{where}: missing field 'moe_intermediate_size'")
        dense_layers = min(layers, _field(cfg, "first_k_dense_replace", where, required=False) or 0)
        n_shared = _field(cfg, "n_shared_experts", where, required=False) or 0
        shared = n_shared * moe_inter
        for key in ("shared_intermediate_size", "shared_expert_intermediate_size"):
            shared = _field(cfg, key, where, required=False) or shared
    elif inter is None:
        raise ModelConfigError(f"{where}: missing field 'intermediate_size'")
    if dense_layers == 0:
        inter = None
    kv_lora = _field(cfg, "kv_lora_rank", where, required=False)
    return ModelArch(
        name=str(archs[0]) if isinstance(archs, list) and archs else model_type,
        model_type=model_type,
        known=model_type in KNOWN_MODEL_TYPES,
        hidden_size=hidden,
        num_layers=layers,
        vocab_size=vocab,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=inter,
        dense_layers=dense_layers,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", data.get("tie_word_embeddings"))),
        max_position_embeddings=_field(cfg, "max_position_embeddings", where, required=False),
        unquantized_dtype_bytes=_DTYPE_BYTES.get(dtype, 2),
        quant=quant,
        kv_lora_rank=kv_lora,
        q_lora_rank=_field(cfg, "q_lora_rank", where, required=False),
        qk_rope_head_dim=_field(cfg, "qk_rope_head_dim", where, required=False) or 0,
        qk_nope_head_dim=_field(cfg, "qk_nope_head_dim", where, required=False) or 0,
        v_head_dim=_field(cfg, "v_head_dim", where, required=False) or 0,
        num_experts=experts,
        experts_per_token=_field(cfg, "num_experts_per_tok", where, required=False) or 0,
        moe_intermediate_size=moe_inter or 0,
        shared_intermediate_size=shared,
        mtp_layers=_field(cfg, "num_nextn_predict_layers", where, required=False) or 0,
        vision_params=_vision_params(data.get("vision_config"), hidden),
    )


def parse_config_text(text: str | bytes, source: str = "config.json") -> ModelArch:
    """JSON text -> ModelArch; malformed JSON is one line naming the file and position."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        where = (
            f" (line {error.lineno}, column {error.colno})"
            if isinstance(error, json.JSONDecodeError)
            else ""
        )
        raise ModelConfigError(f"{source}: not valid JSON{where}") from None
    return parse_config(data, source)
