"""The deployment preflight against real checkpoint configs and their stated sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.gpu.model import GpuBoxSnapshot, GpuStatic
from tui.plan import (
    FITS,
    INVALID,
    TOO_BIG,
    GpuInventoryError,
    ModelConfigError,
    PlanSettings,
    build_plan,
    inventory_from_snapshot,
    model_from_config,
    stated_inventory,
)
from tui.plan.render import plan_json, plan_markdown

MODELS = Path(__file__).parents[1] / "support" / "fixtures" / "models"
GIB = 1024**3


def plan_for(name: str, checkpoint_gib: float, gpus: int, vram_gib: float, **settings: object):
    path = MODELS / f"{name}.json"
    model = model_from_config(path.read_text(), str(path), checkpoint_gib)
    inventory = stated_inventory(gpus, vram_gib, "12.0", False)
    return build_plan(model, inventory, PlanSettings(**settings))  # type: ignore[arg-type]


def test_minimax_tp8_without_ep_is_invalid_with_the_block_arithmetic() -> None:
    plan = plan_for("MiniMax-M2.7", 214.33, 8, 96)
    tp8 = plan.find(8)
    assert tp8 is not None and tp8.verdict == INVALID
    assert "1536 / 8 = 192" in tp8.reason and "FP8 block 128" in tp8.reason
    tp4 = plan.find(4)
    assert tp4 is not None and tp4.verdict == FITS
    assert any("1536 / 4 = 384 = 3 x FP8 block 128" in c.arithmetic for c in tp4.checks)
    assert tp4.weight_bytes_per_gpu == pytest.approx(214.33 * GIB / 4, rel=0.01)
    tp8_ep = plan.find(8, ep=True)
    assert tp8_ep is not None and tp8_ep.verdict == FITS
    assert any("256 / EP 8 = 32" in c.arithmetic for c in tp8_ep.checks)
    # GQA with 8 KV heads over TP 8: one head per GPU, 2 x 1 x 128 x 62 layers x 2 B.
    assert tp8_ep.kv_bytes_per_token_per_gpu == 2 * 1 * 128 * 62 * 2


def test_kimi_int4_tp4_too_big_tp8_fits_with_kv_room_in_tokens() -> None:
    plan = plan_for("Kimi-K2.5", 554.30, 8, 96, max_model_len=131072)
    tp4 = plan.find(4)
    assert tp4 is not None and tp4.verdict == TOO_BIG
    # 554.30 / 4 = 138.6 GiB, plus the MLA down-projections and vision tower kept whole.
    assert tp4.weight_bytes_per_gpu / GIB == pytest.approx(138.6, rel=0.02)
    tp8 = plan.find(8)
    assert tp8 is not None and tp8.verdict == FITS
    per_token = (512 + 64) * 61 * 2  # MLA latent, replicated on every TP rank
    assert tp8.kv_bytes_per_token_per_gpu == per_token
    assert tp8.max_tokens == tp8.kv_room_bytes_per_gpu // per_token
    assert tp8.max_tokens > 131072 and tp8.full_length_requests == tp8.max_tokens // 131072
    assert f"{tp8.max_tokens:,} tokens" in tp8.reason


def test_kimi_at_its_full_context_names_the_max_model_len_that_fits() -> None:
    tp8 = plan_for("Kimi-K2.5", 554.30, 8, 96).find(8)
    assert tp8 is not None and tp8.verdict == TOO_BIG
    assert "262,144" in tp8.reason and f"<= {tp8.max_tokens:,} fits" in tp8.reason


def test_glm51_fp8_leaves_no_room_on_96_gib() -> None:
    plan = plan_for("GLM-5.1-FP8", 704.25, 8, 96)
    tp8 = plan.find(8)
    assert tp8 is not None and tp8.verdict == TOO_BIG
    assert tp8.weight_bytes_per_gpu / GIB == pytest.approx(88.0, rel=0.02)
    assert "86.40 GiB" in tp8.reason  # 0.9 x 96
    assert not any(r.verdict == FITS for r in plan.layouts)
    assert any(hit.rule_id == "mtp-not-loaded" for hit in plan.warnings)


def test_deepseek_v3_fits_tp8_on_141_gib() -> None:
    plan = plan_for("DeepSeek-V3", 641.30, 8, 141)
    tp8 = plan.find(8)
    assert tp8 is not None and tp8.verdict == FITS
    assert any("attention heads 128 / 8 = 16" in c.arithmetic for c in tp8.checks)
    assert any("2048 / 8 = 256 = 2 x FP8 block 128" in c.arithmetic for c in tp8.checks)
    assert plan.find(4).verdict == TOO_BIG  # type: ignore[union-attr]


def test_rules_warn_about_pcie_tp_numa_and_fp8_kv_with_mla_on_sm120() -> None:
    path = MODELS / "Kimi-K2.5.json"
    model = model_from_config(path.read_text(), str(path), 554.30)
    snapshot = GpuBoxSnapshot(
        source="nvml",
        taken_at_s=0.0,
        statics=tuple(
            GpuStatic(i, "RTX PRO 6000", f"GPU-{i}", f"0:{i}", 96 * GIB, "12.0", i // 4)
            for i in range(8)
        ),
        topology=tuple(tuple("X" if i == j else "SYS" for j in range(8)) for i in range(8)),
    )
    gpus = inventory_from_snapshot(snapshot)
    assert gpus.nvlink is False and gpus.count == 8
    plan = build_plan(model, gpus, PlanSettings(kv_cache_dtype="fp8", max_model_len=65536))
    assert [h.rule_id for h in plan.warnings if h.severity == "error"] == ["fp8-kv-mla-sm120"]
    tp8_rules = {hit.rule_id for hit in plan.find(8).warnings}  # type: ignore[union-attr]
    assert {"tp-over-pcie", "tp-spans-numa"} <= tp8_rules
    tp4_rules = {hit.rule_id for hit in plan.find(4).warnings}  # type: ignore[union-attr]
    assert "tp-spans-numa" not in tp4_rules and "idle-gpus" in tp4_rules
    assert all(hit.source for hit in plan.warnings)


def test_markdown_and_json_carry_the_arithmetic() -> None:
    plan = plan_for("MiniMax-M2.7", 214.33, 8, 96)
    from tui.plan import Layout

    text = plan_markdown(plan, chosen=Layout(4))
    assert "| **TP=4** (chosen) | 4 |" in text
    assert "1536 / 8 = 192, not divisible by the FP8 block 128" in text
    assert "### TP=4: fits" in text
    import json

    data = json.loads(plan_json(plan))
    assert data["layouts"][0]["layout"]["label"] == "TP=1"
    assert data["weights"]["total_bytes"] == int(214.33 * GIB)


def test_unknown_architecture_falls_back_with_a_warning() -> None:
    config = (
        '{"model_type": "brand_new", "architectures": ["BrandNewForCausalLM"],'
        ' "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,'
        ' "num_key_value_heads": 8, "vocab_size": 128000, "intermediate_size": 14336,'
        ' "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}'
    )
    model = model_from_config(config, "brand/config.json")
    plan = build_plan(model, stated_inventory(1, 80))
    assert any(h.rule_id == "unknown-architecture" for h in plan.warnings)
    # An 8B-class dense model in bf16: about 15 GiB, fits one 80 GiB GPU.
    assert model.weights.total_bytes / GIB == pytest.approx(14.96, rel=0.02)
    assert plan.find(1).verdict == FITS  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "bad/config.json: not valid JSON (line 1, column 2)"),
        ("[1, 2]", "bad/config.json: expected a JSON object at the top level"),
        ('{"hidden_size": 10}', "bad/config.json: missing field 'num_hidden_layers'"),
        (
            '{"hidden_size": 8, "num_hidden_layers": "x", "num_attention_heads": 1,'
            ' "vocab_size": 4}',
            "bad/config.json: field 'num_hidden_layers' should be a whole number, got 'x'",
        ),
    ],
)
def test_malformed_config_is_one_line_naming_file_and_field(text: str, message: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        model_from_config(text, "bad/config.json")
    assert str(caught.value) == message
    assert caught.value.exit_code == 2


def test_zero_gpus_and_an_empty_snapshot_are_refused() -> None:
    with pytest.raises(GpuInventoryError, match="--gpus must be at least 1, got 0"):
        stated_inventory(0, 96)
    empty = GpuBoxSnapshot(source="nvml", taken_at_s=0.0, available=False, error="no driver")
    with pytest.raises(GpuInventoryError, match=r"no GPUs to plan for \(nvml\): no driver"):
        inventory_from_snapshot(empty)


def test_plan_core_never_imports_textual() -> None:
    import subprocess
    import sys

    code = "import sys, tui.plan.render, tui.commands.plan_cmd; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
