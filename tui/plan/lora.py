"""LoRA adapters' GPU memory: the slots vLLM allocates at start for `--max-loras` adapters.

vLLM (vllm/lora/layers, 0.32) allocates, for every linear it can adapt, a zeroed A
stack `max_loras x rank x input` and B stack `max_loras x output x rank` in
`--lora-dtype` (auto: the model's dtype), whether or not an adapter is loaded. A
column-parallel linear keeps A whole and splits B's output by TP; a row-parallel one
splits A's input and keeps B whole; MoE layers get a slot per expert held on the GPU.
The slots come out of the KV cache's room, so the plan subtracts them. Adapters kept
in host memory (`--max-cpu-loras`) cost no GPU memory and are shown as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tui.core.errors import ServedeckError
from tui.plan.modelcfg import ModelArch
from tui.serving.unit.exec_start import exec_start_argv

# vLLM's --lora-dtype choices (LoRADType) and the ranks --max-lora-rank accepts (MaxLoRARanks).
LORA_DTYPE_BYTES = {"float16": 2, "bfloat16": 2}
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


class LoraFlagsError(ServedeckError):
    """A LoRA flag of the unit's command line that vLLM would refuse (exit code 2)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class LoraSettings:
    """`--enable-lora` with its limits, vLLM's defaults where a flag is absent."""

    max_loras: int = 1
    max_lora_rank: int = 16
    max_cpu_loras: int | None = None  # None: vLLM uses max_loras
    lora_dtype: str = "auto"


@dataclass(frozen=True, slots=True)
class LoraMemory:
    """The adapters' slots on the fullest GPU of a layout, with the arithmetic."""

    bytes_per_gpu: int
    lines: tuple[str, ...]


def _flag_values(argv: Sequence[str]) -> dict[str, str]:
    """`--flag value` and `--flag=value` pairs; a bare flag maps to ''."""
    values: dict[str, str] = {}
    for at, word in enumerate(argv):
        if not word.startswith("--"):
            continue
        name, eq, value = word.partition("=")
        if not eq:
            following = argv[at + 1] if at + 1 < len(argv) else ""
            value = "" if following.startswith("-") else following
        values[name.replace("_", "-")] = value
    return values


def _whole(values: dict[str, str], flag: str, default: int | None, source: str) -> int | None:
    text = values.get(flag)
    if text is None:
        return default
    if not text.isdigit() or int(text) < 1:
        raise LoraFlagsError(f"{source}: {flag} {text!r} should be a whole number >= 1")
    return int(text)


def lora_from_argv(argv: Sequence[str], source: str) -> LoraSettings | None:
    """The LoRA limits of a `vllm serve` command line; None without --enable-lora."""
    values = _flag_values(argv)
    if "--enable-lora" not in values:
        return None
    max_loras = _whole(values, "--max-loras", 1, source) or 1
    rank = _whole(values, "--max-lora-rank", 16, source) or 16
    if rank not in LORA_RANKS:
        raise LoraFlagsError(
            f"{source}: --max-lora-rank {rank} is not one vLLM accepts "
            f"({', '.join(map(str, LORA_RANKS))})"
        )
    cpu = _whole(values, "--max-cpu-loras", None, source)
    if cpu is not None and cpu < max_loras:
        raise LoraFlagsError(f"{source}: --max-cpu-loras {cpu} < --max-loras {max_loras}")
    dtype = values.get("--lora-dtype") or "auto"
    if dtype != "auto" and dtype not in LORA_DTYPE_BYTES:
        raise LoraFlagsError(
            f"{source}: --lora-dtype {dtype!r} is not one of auto, float16, bfloat16"
        )
    return LoraSettings(max_loras, rank, cpu, dtype)


def lora_from_unit(name: str, text: str) -> LoraSettings | None:
    """The LoRA limits of a unit's effective `ExecStart=` (drop-ins applied, as `systemctl cat`)."""
    return lora_from_argv(exec_start_argv(name, text), f"{name} ExecStart")


def _linears(arch: ModelArch, tp: int) -> list[tuple[str, int, int, int]]:
    """(name, input, output, layers) per adapted linear, already split by TP."""
    hidden, layers = arch.hidden_size, arch.num_layers
    heads = arch.num_attention_heads
    if arch.is_mla:
        q_width = heads * (arch.qk_nope_head_dim + arch.qk_rope_head_dim)
        kv_lora = arch.kv_lora_rank or 0
        attention = [("kv_a", hidden, kv_lora + arch.qk_rope_head_dim, layers)]
        if arch.q_lora_rank:
            attention += [("q_a", hidden, arch.q_lora_rank, layers)]
            attention += [("q_b", arch.q_lora_rank, q_width // tp, layers)]
        else:
            attention += [("q", hidden, q_width // tp, layers)]
        heads_out = heads * (arch.qk_nope_head_dim + arch.v_head_dim)
        attention += [("kv_b", kv_lora, heads_out // tp, layers)]
        attention += [("o", heads * arch.v_head_dim // tp, hidden, layers)]
    else:
        q_width, kv_width = heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
        attention = [
            ("q", hidden, q_width // tp, layers),
            ("k", hidden, max(1, kv_width // tp), layers),
            ("v", hidden, max(1, kv_width // tp), layers),
            ("o", q_width // tp, hidden, layers),
        ]
    mlp: list[tuple[str, int, int, int]] = []
    for name, width, count in (
        ("", arch.intermediate_size or 0, arch.dense_layers),
        ("shared ", arch.shared_intermediate_size, arch.moe_layers),
    ):
        if width and count:
            mlp += [(f"{name}{proj}", hidden, width // tp, count) for proj in ("gate", "up")]
            mlp += [(f"{name}down", width // tp, hidden, count)]
    return attention + mlp


def lora_memory(arch: ModelArch, lora: LoraSettings, tp: int, pp: int, ep_size: int) -> LoraMemory:
    """Bytes of the adapters' slots on one GPU: each linear's A+B at max rank, per layer."""
    dtype_bytes = LORA_DTYPE_BYTES.get(lora.lora_dtype, arch.unquantized_dtype_bytes)
    dtype_word = lora.lora_dtype if lora.lora_dtype != "auto" else "the model's dtype"
    rank, slots = lora.max_lora_rank, lora.max_loras
    stage = math.ceil(arch.num_layers / pp) / arch.num_layers
    per_slot = 0
    terms: list[str] = []
    for name, inputs, outputs, layers in _linears(arch, tp):
        held = math.ceil(layers * stage)
        per_slot += (inputs + outputs) * held
        terms.append(f"{name} ({inputs:,}+{outputs:,}) x {held}")
    if arch.is_moe and arch.moe_intermediate_size:
        experts = math.ceil(arch.num_experts / ep_size)
        width = arch.moe_intermediate_size // (1 if ep_size > 1 else tp)
        held = math.ceil(arch.moe_layers * stage)
        # w13: gate and up, A over hidden and B over the expert width; w2: the reverse.
        expert_elems = 3 * (arch.hidden_size + width)
        per_slot += experts * expert_elems * held
        terms.append(f"{experts} experts x 3 x ({arch.hidden_size:,}+{width:,}) x {held}")
    per_slot_bytes = per_slot * rank * dtype_bytes
    total = per_slot_bytes * slots
    cpu = lora.max_cpu_loras or slots
    lines = (
        f"LoRA slot = rank {rank} x [{' + '.join(terms)}] x {dtype_bytes} B ({dtype_word}) "
        f"= {per_slot_bytes:,} B",
        f"LoRA adapters: --max-loras {slots} x {per_slot_bytes:,} B = {total / 2**30:.2f} GiB "
        f"per GPU; --max-cpu-loras {cpu} kept in host memory (no GPU memory)",
    )
    return LoraMemory(total, lines)
