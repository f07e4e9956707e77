"""A tiny zero-initialised PEFT LoRA adapter for the tiny test Llama, written at test time.

PEFT's layout (adapter_config.json + adapter_model.safetensors with
`base_model.model.<module>.lora_A/lora_B.weight`), written with the standard library: the
safetensors format is an 8-byte header length, a JSON header, then the raw tensors. All
weights are zero (B is zero-initialised by PEFT too), so the adapter changes no output;
vLLM still loads, lists and routes to it as to any adapter.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

TARGETS = ("q_proj", "v_proj")


def write_zero_adapter(
    out: Path, config: dict[str, object], rank: int = 8, base_model: str = "tiny"
) -> Path:
    """The adapter folder for a model of this config.json (q_proj and v_proj, bf16 zeros)."""
    hidden = int(config["hidden_size"])  # type: ignore[call-overload]
    heads = int(config["num_attention_heads"])  # type: ignore[call-overload]
    kv_heads = int(config.get("num_key_value_heads", heads))  # type: ignore[call-overload]
    head_dim = int(config.get("head_dim", hidden // heads))  # type: ignore[call-overload]
    outputs = {"q_proj": heads * head_dim, "v_proj": kv_heads * head_dim}
    shapes: dict[str, list[int]] = {}
    for layer in range(int(config["num_hidden_layers"])):  # type: ignore[call-overload]
        for module in TARGETS:
            base = f"base_model.model.model.layers.{layer}.self_attn.{module}"
            shapes[f"{base}.lora_A.weight"] = [rank, hidden]
            shapes[f"{base}.lora_B.weight"] = [outputs[module], rank]
    header: dict[str, object] = {}
    offset = 0
    for name, shape in shapes.items():
        size = shape[0] * shape[1] * 2  # bf16
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    out.mkdir(parents=True, exist_ok=True)
    (out / "adapter_model.safetensors").write_bytes(
        struct.pack("<Q", len(text)) + text + bytes(offset)
    )
    adapter = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": rank,
        "lora_alpha": 2 * rank,
        "lora_dropout": 0.0,
        "target_modules": list(TARGETS),
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "base_model_name_or_path": base_model,
    }
    (out / "adapter_config.json").write_text(json.dumps(adapter, indent=2))
    return out
