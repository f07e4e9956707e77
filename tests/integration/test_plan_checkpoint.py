"""A small checkpoint written by hand in the safetensors format, read back through LocalHost."""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tui.hosts.local import LocalHost
from tui.plan import FITS, CheckpointError, Layout, PlanSettings, build_plan, read_model_dir
from tui.plan import stated_inventory as gpus
from tui.plan.safetensors import parse_header
from tui.plan.weights import (
    ATTENTION,
    DENSE_MLP,
    EMBED,
    LM_HEAD,
    MTP,
    NORMS,
    ROUTED_EXPERTS,
    ROUTER,
    SHARED_EXPERTS,
)

H, V, INTER, MOE_I, EXPERTS = 64, 256, 128, 32, 4
CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": H,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": V,
    "intermediate_size": INTER,
    "moe_intermediate_size": MOE_I,
    "n_routed_experts": EXPERTS,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "num_experts_per_tok": 2,
    "num_nextn_predict_layers": 1,
    "max_position_embeddings": 1024,
    "torch_dtype": "bfloat16",
}


def _mlp(prefix: str, inter: int) -> dict[str, list[int]]:
    return {
        f"{prefix}.gate_proj.weight": [inter, H],
        f"{prefix}.up_proj.weight": [inter, H],
        f"{prefix}.down_proj.weight": [H, inter],
    }


def _layer(i: int, moe: bool) -> dict[str, list[int]]:
    p = f"model.layers.{i}"
    shapes = {
        f"{p}.input_layernorm.weight": [H],
        f"{p}.post_attention_layernorm.weight": [H],
        f"{p}.self_attn.q_proj.weight": [64, H],
        f"{p}.self_attn.k_proj.weight": [32, H],
        f"{p}.self_attn.v_proj.weight": [32, H],
        f"{p}.self_attn.o_proj.weight": [H, 64],
    }
    if not moe:
        return shapes | _mlp(f"{p}.mlp", INTER)
    shapes[f"{p}.mlp.gate.weight"] = [EXPERTS, H]
    shapes |= _mlp(f"{p}.mlp.shared_experts", MOE_I)
    for e in range(EXPERTS):
        shapes |= _mlp(f"{p}.mlp.experts.{e}", MOE_I)
    return shapes


def write_shard(path: Path, shapes: dict[str, list[int]]) -> None:
    """The safetensors format by hand: u64 LE header length, JSON header, then the data."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in shapes.items():
        size = math.prod(shape) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def nbytes(shapes: dict[str, list[int]]) -> int:
    return sum(math.prod(shape) * 2 for shape in shapes.values())


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    model = tmp_path / "tiny-moe"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    write_shard(
        model / "model-00001-of-00002.safetensors",
        {"model.embed_tokens.weight": [V, H]} | _layer(0, moe=False),
    )
    write_shard(
        model / "model-00002-of-00002.safetensors",
        _layer(1, moe=True)
        | {"model.layers.2.eh_proj.weight": [H, 2 * H]}  # the MTP layer: not loaded
        | {"model.norm.weight": [H], "lm_head.weight": [V, H]},
    )
    return model


async def test_headers_are_split_per_tensor_exactly(checkpoint: Path) -> None:
    host = LocalHost()
    model = await read_model_dir(host, str(checkpoint))
    await host.close()
    w = model.weights
    assert (w.source, w.files, w.tensors) == (
        "safetensors",
        2,
        1 + (6 + 3) + (6 + 1 + 3 + 3 * EXPERTS) + 3,
    )
    expected = {
        EMBED: V * H * 2,
        LM_HEAD: V * H * 2,
        ATTENTION: 2 * nbytes({"q": [64, H], "k": [32, H], "v": [32, H], "o": [H, 64]}),
        DENSE_MLP: 3 * INTER * H * 2,
        ROUTED_EXPERTS: EXPERTS * 3 * MOE_I * H * 2,
        SHARED_EXPERTS: 3 * MOE_I * H * 2,
        ROUTER: EXPERTS * H * 2,
        NORMS: 5 * H * 2,
        MTP: H * 2 * H * 2,
    }
    assert dict(w.components) == expected
    on_disk = sum(p.stat().st_size for p in checkpoint.glob("*.safetensors"))
    assert w.total_bytes < on_disk  # headers and padding are not weights

    plan = build_plan(model, gpus(4, 1.0), PlanSettings(reserve_bytes=0))
    tp2 = plan.find(2)
    assert tp2 is not None and tp2.verdict == FITS
    split = sum(expected[n] for n in (EMBED, LM_HEAD, ATTENTION, DENSE_MLP, ROUTED_EXPERTS))
    split += expected[SHARED_EXPERTS]
    assert tp2.weight_bytes_per_gpu == split // 2 + expected[ROUTER] + expected[NORMS]
    tp2_ep = plan.find(2, ep=True)
    assert dict(tp2_ep.components_per_gpu)[ROUTED_EXPERTS] == expected[ROUTED_EXPERTS] // 2  # type: ignore[union-attr]
    dp_ep = plan.find(1, ep=True, dp=4)
    assert dp_ep is not None and dp_ep.layout == Layout(1, 1, 4, True)
    assert dict(dp_ep.components_per_gpu)[ROUTED_EXPERTS] == expected[ROUTED_EXPERTS] // 4
    assert dict(dp_ep.components_per_gpu)[ATTENTION] == expected[ATTENTION]


def test_bad_headers_name_the_file_and_tensor(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"x\.safetensors: too short"):
        parse_header(b"\x01\x00", "x.safetensors")
    good = json.dumps({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 10]}}).encode()
    with pytest.raises(CheckpointError) as caught:
        parse_header(struct.pack("<Q", len(good)) + good, "x.safetensors")
    assert str(caught.value) == (
        "x.safetensors: tensor 'w': data_offsets span 10 bytes but BF16 x [2, 3] is 12"
    )


def test_cli_reads_the_checkpoint_and_prints_the_plan(checkpoint: Path) -> None:
    argv = [sys.executable, "-m", "tui", "plan", "--model-dir", str(checkpoint)]
    result = subprocess.run(
        [*argv, "--gpus", "2", "--vram-gib", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["weights"]["source"] == "safetensors"
    assert [row["layout"]["label"] for row in data["layouts"]][:2] == ["TP=1", "TP=2"]

    missing = subprocess.run(
        [*argv[:-1], str(checkpoint / "nope"), "--gpus", "2", "--vram-gib", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"servedeck: error: {checkpoint / 'nope' / 'config.json'}: cannot read it "
        f"(local: cannot read {checkpoint / 'nope' / 'config.json'}: No such file or directory)"
    ]


GPU_ARGS = ["--gpus", "4", "--vram-gib", "1", "--reserve-gib", "0", "--max-model-len", "512"]


def test_cli_marks_the_profiles_layout_and_counts_its_kv(checkpoint: Path, tmp_path: Path) -> None:
    profile = tmp_path / "tiny.toml"
    profile.write_text(f'[model]\nname = "tiny"\npath = "{checkpoint}"\ntp = 2\nep = true\n')
    result = subprocess.run(
        [sys.executable, "-m", "tui", "plan", "--profile", str(profile), *GPU_ARGS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "| **TP=2 EP** (chosen) | 2 |" in result.stdout
    assert "### TP=2 EP: fits" in result.stdout
    # GQA: 2 KV heads over TP 2 = 1 head x 16 x 2 layers x 2 K/V x 2 B = 128 B per token.
    assert "GQA 2 x 1 KV heads x 16 x 2 layers x 2 B = 128 B/token per GPU" in result.stdout
