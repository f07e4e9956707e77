"""LoRA adapters in the Plan: the unit's --max-loras/--max-lora-rank slots, their bytes on
each GPU taken out of the KV room, with the arithmetic (real checkpoint configs).

Each expected figure is written from vLLM 0.32's allocation (vllm/lora/layers): a zeroed
A stack `max_loras x rank x input` and B stack `max_loras x output x rank` per adapted
linear, column-parallel B and row-parallel A split by TP; fused-MoE stacks per local expert.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.cli_support import run
from tui.core.config import ServiceConfig, demo_profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.ops.plan import unit_lora
from tui.plan import FITS, TOO_BIG, PlanSettings, build_plan, model_from_config, stated_inventory
from tui.plan.lora import LoraFlagsError, LoraSettings, lora_from_argv, lora_from_unit

MODELS = Path(__file__).parents[1] / "support" / "fixtures" / "models"
GIB = 1024**3

UNIT = """# /etc/systemd/system/vllm.service
[Service]
ExecStart=/opt/vllm/bin/vllm serve /models/MiniMax-M2.7 --tensor-parallel-size 4
# /etc/systemd/system/vllm.service.d/lora.conf
[Service]
ExecStart=
ExecStart=/opt/vllm/bin/vllm serve /models/MiniMax-M2.7 --tensor-parallel-size 4 \\
    --enable-lora --max-loras 4 --max-lora-rank=32 --max-cpu-loras 16 \\
    --lora-modules sql=/adapters/sql
"""


def plan_for(name: str, checkpoint_gib: float, lora: LoraSettings | None, **settings: object):
    path = MODELS / f"{name}.json"
    model = model_from_config(path.read_text(), str(path), checkpoint_gib)
    inventory = stated_inventory(8, 96, "12.0", False)
    return build_plan(model, inventory, PlanSettings(lora=lora, **settings))  # type: ignore[arg-type]


def test_the_units_effective_exec_start_gives_the_lora_limits() -> None:
    lora = lora_from_unit("vllm.service", UNIT)
    assert lora == LoraSettings(max_loras=4, max_lora_rank=32, max_cpu_loras=16)
    # The drop-in's empty ExecStart= resets the list: the first line's flags are gone.
    without = UNIT.split("# /etc/systemd/system/vllm.service.d")[0]
    assert lora_from_unit("vllm.service", without) is None
    assert lora_from_argv(["vllm", "serve", "m", "--enable-lora"], "x") == LoraSettings()


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--max-loras", "zero"], "--max-loras 'zero'"),
        (["--max-lora-rank", "24"], "--max-lora-rank 24"),
        (["--max-loras", "4", "--max-cpu-loras", "2"], "--max-cpu-loras 2 < --max-loras 4"),
        (["--lora-dtype", "float32"], "--lora-dtype 'float32'"),
    ],
)
def test_a_flag_vllm_would_refuse_is_one_line_naming_it(flags: list[str], named: str) -> None:
    with pytest.raises(LoraFlagsError) as caught:
        lora_from_argv(["vllm", "serve", "m", "--enable-lora", *flags], "vllm.service ExecStart")
    assert named in str(caught.value) and "vllm.service ExecStart" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_minimax_gqa_moe_slots_leave_the_kv_room_with_the_arithmetic() -> None:
    lora = LoraSettings(max_loras=4, max_lora_rank=16)
    bare = plan_for("MiniMax-M2.7", 214.33, None).find(4)
    with_lora = plan_for("MiniMax-M2.7", 214.33, lora).find(4)
    assert bare is not None and with_lora is not None
    hidden, layers, tp, rank, slots = 3072, 62, 4, 16, 4
    q, kv, experts, expert_inter = 48 * 128, 8 * 128, 256, 1536
    attention = (hidden + q // tp) + 2 * (hidden + kv // tp) + (q // tp + hidden)
    moe = experts * 3 * (hidden + expert_inter // tp)  # w13 (gate, up) and w2, every expert
    expected = slots * rank * 2 * layers * (attention + moe)
    assert with_lora.lora_bytes_per_gpu == expected
    assert expected / GIB == pytest.approx(19.73, abs=0.01)  # MoE LoRA is not small
    assert bare.kv_room_bytes_per_gpu - with_lora.kv_room_bytes_per_gpu == expected
    assert with_lora.max_tokens < bare.max_tokens
    text = "\n".join(with_lora.arithmetic)
    assert f"--max-loras 4 x {expected // slots:,} B = {expected / GIB:.2f} GiB per GPU" in text
    assert "256 experts x 3 x (3,072+384) x 62" in text
    assert f"- {expected / GIB:.2f} GiB LoRA - " in text


def test_kimi_mla_with_ep_splits_experts_and_more_slots_turn_a_fit_too_big() -> None:
    lora = LoraSettings(max_loras=1, max_lora_rank=8)
    tp8_ep = plan_for("Kimi-K2.5", 554.30, lora).find(8, ep=True)
    assert tp8_ep is not None
    hidden, layers, dense, tp, rank = 7168, 61, 1, 8, 8
    heads, nope, rope, v, q_lora, kv_lora = 64, 128, 64, 128, 1536, 512
    attention = (
        (hidden + kv_lora + rope)  # kv_a, replicated
        + (hidden + q_lora)  # q_a, replicated
        + (q_lora + heads * (nope + rope) // tp)  # q_b, column-parallel
        + (kv_lora + heads * (nope + v) // tp)  # kv_b, column-parallel
        + (heads * v // tp + hidden)  # o, row-parallel
    ) * layers
    dense_mlp = (2 * (hidden + 18432 // tp) + (18432 // tp + hidden)) * dense
    shared = (2 * (hidden + 2048 // tp) + (2048 // tp + hidden)) * (layers - dense)
    experts = (384 // 8) * 3 * (hidden + 2048) * (layers - dense)  # EP 8: 48 whole experts
    assert tp8_ep.lora_bytes_per_gpu == rank * 2 * (attention + dense_mlp + shared + experts)
    fits = plan_for("Kimi-K2.5", 554.30, None, max_model_len=131072).find(8)
    crowded = LoraSettings(max_loras=8, max_lora_rank=64)
    too_big = plan_for("Kimi-K2.5", 554.30, crowded, max_model_len=131072).find(8)
    assert fits is not None and fits.verdict == FITS
    assert too_big is not None and too_big.verdict == TOO_BIG
    assert "LoRA" in too_big.reason


def test_servedeck_plan_takes_the_lora_flags_and_refuses_a_bad_rank(
    cli_env: dict[str, str],
) -> None:
    env = cli_env
    config = str(MODELS / "MiniMax-M2.7.json")
    base = ["plan", "--config", config, "--checkpoint-gib", "214.33", "--gpus", "8"]
    base += ["--vram-gib", "96", "--details"]
    done = run(env, *base, "--max-loras", "4", "--max-lora-rank", "16")
    assert done.returncode == 0, done.stderr
    assert "LoRA --max-loras 4 --max-lora-rank 16" in done.stdout
    assert "19.73 GiB per GPU" in done.stdout
    refused = run(env, *base, "--max-lora-rank", "24")
    assert refused.returncode == 2
    assert "servedeck plan: --max-lora-rank 24 is not one vLLM accepts" in refused.stderr
    assert "Traceback" not in refused.stderr


async def test_a_unit_that_cannot_be_read_leaves_lora_unknown_and_says_so() -> None:
    base = demo_profile()
    profile = replace(base, host=replace(base.host, kind="local"), service=ServiceConfig(unit=""))
    deck = Deck(profile, LocalHost())
    try:
        lora, unread = await unit_lora(deck)
    finally:
        await deck.close()
    assert lora is None and unread is not None
    assert unread.message.startswith("LoRA adapters' memory not counted: the unit's flags were")
    assert "[service] unit is not set" in unread.message
