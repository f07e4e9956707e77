"""`servedeck plan`: will this model fit, and which TP/EP layouts are valid, before a long load."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import replace
from pathlib import Path

from tui.compose import open_deck
from tui.core.config import Profile
from tui.core.errors import UsageError
from tui.deck import Deck
from tui.hosts.base import Host
from tui.hosts.local import LocalHost
from tui.hosts.profiles import load_profile
from tui.plan import (
    GpuInventory,
    Layout,
    ModelConfigError,
    ModelFacts,
    Plan,
    PlanSettings,
    build_plan,
    inventory_from_nvidia_smi,
    model_from_config,
    read_model_dir,
    stated_inventory,
)
from tui.plan.lora import lora_from_argv
from tui.plan.render import plan_json, plan_markdown


def add_parser(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "plan",
        parents=[common],
        help="preflight a deployment: memory per GPU and valid TP/EP layouts",
        description="Compute weights per GPU, KV cache room and layout validity up front.",
    )
    model = parser.add_argument_group("model (default: the profile's model.path)")
    model.add_argument(
        "--model-dir", metavar="DIR", help="checkpoint folder (config.json + *.safetensors)"
    )
    model.add_argument(
        "--config", metavar="FILE", help="a config.json alone (needs --checkpoint-gib)"
    )
    model.add_argument("--checkpoint-gib", type=float, metavar="X", help="stated checkpoint size")
    gpus = parser.add_argument_group("GPUs (default: ask nvidia-smi on this machine)")
    gpus.add_argument("--gpus", type=int, metavar="N", help="number of GPUs on the box")
    gpus.add_argument("--vram-gib", type=float, metavar="X", help="memory of one GPU in GiB")
    gpus.add_argument("--cc", metavar="MAJOR.MINOR", help="compute capability, e.g. 12.0")
    gpus.add_argument(
        "--nvlink",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the GPUs are joined by NVLink (default: as the box reports)",
    )
    engine = parser.add_argument_group("engine settings")
    engine.add_argument(
        "--gpu-memory-utilization",
        type=float,
        default=0.9,
        metavar="F",
        help="vLLM's share of each GPU's memory (default: 0.9)",
    )
    engine.add_argument(
        "--max-model-len", type=int, metavar="TOKENS", help="context length (default: the model's)"
    )
    engine.add_argument(
        "--kv-cache-dtype",
        default="auto",
        metavar="auto|bf16|fp8",
        help="KV cache element type (default: auto, the model's dtype)",
    )
    engine.add_argument(
        "--reserve-gib",
        type=float,
        default=2.0,
        metavar="X",
        help="runtime memory per GPU besides weights and KV cache (default 2)",
    )
    engine.add_argument(
        "--max-loras",
        type=int,
        metavar="N",
        help="LoRA adapter slots on each GPU, as vLLM's flag (their memory leaves the KV room)",
    )
    engine.add_argument(
        "--max-lora-rank", type=int, metavar="R", help="the slots' rank (vLLM's default 16)"
    )
    parser.add_argument("--details", action="store_true", help="show every layout's arithmetic")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.set_defaults(func=run_plan)


async def _model(args: argparse.Namespace, profile: Profile | None, host: Host) -> ModelFacts:
    if args.model_dir and args.config:
        raise UsageError("give either --model-dir or --config, not both")
    checkpoint_gib = args.checkpoint_gib
    if checkpoint_gib is None and profile is not None:
        checkpoint_gib = profile.model.checkpoint_gib
    if args.config:
        path = Path(args.config)
        try:
            text = path.read_bytes()
        except OSError as error:
            raise ModelConfigError(f"{path}: cannot read it ({error.strerror})") from None
        return model_from_config(text, str(path), checkpoint_gib)
    model_dir = args.model_dir or (profile.model.path if profile else None)
    if not model_dir:
        raise UsageError("no model: give --model-dir DIR, or --config FILE --checkpoint-gib X")
    return await read_model_dir(host, model_dir)


async def _gpus(args: argparse.Namespace, deck: Deck | None) -> GpuInventory:
    if args.gpus is None and args.vram_gib is None:
        inventory = await (deck.gpu_inventory() if deck else inventory_from_nvidia_smi(LocalHost()))
        cc = args.cc or inventory.compute_capability
        return GpuInventory(
            inventory.count,
            inventory.memory_bytes,
            cc,
            inventory.nvlink if args.nvlink is None else args.nvlink,
            inventory.numa_nodes,
            inventory.name,
            inventory.source,
        )
    if args.gpus is None or args.vram_gib is None:
        raise UsageError("--gpus and --vram-gib go together")
    return stated_inventory(args.gpus, args.vram_gib, args.cc, args.nvlink)


async def _plan_text(args: argparse.Namespace) -> str:
    profile = load_profile(args.profile, demo=args.demo) if (args.profile or args.demo) else None
    # The model directory and the GPUs live on the profile's box: its host (local or over
    # SSH), or the demo's simulated box, never this machine's GPUs.
    deck = open_deck(profile) if profile is not None else None
    try:
        if deck is not None and not (args.config or args.model_dir):
            model = await deck.model_facts()
        else:
            model = await _model(args, profile, deck.host if deck else LocalHost())
        gpus = await _gpus(args, deck)
    finally:
        if deck is not None:
            await deck.close()
    return _render(args, profile, model, gpus)


def plan_settings(
    profile: Profile | None,
    *,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
    kv_cache_dtype: str = "auto",
    reserve_gib: float = 2.0,
) -> PlanSettings:
    """The engine settings to plan with; the context length defaults to the profile's."""
    max_len = max_model_len or (profile.model.max_model_len if profile else None)
    if max_len is not None and max_len < 1:
        raise UsageError(f"--max-model-len must be at least 1, got {max_len}")
    return PlanSettings(
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_len,
        kv_cache_dtype=kv_cache_dtype,
        reserve_bytes=int(reserve_gib * 1024**3),
    )


async def deck_plan(deck: Deck, settings: PlanSettings, model_dir: str | None = None) -> Plan:
    """The plan on the deck's own box: its GPUs, and its model (or `model_dir` on that host)."""
    model = await (read_model_dir(deck.host, model_dir) if model_dir else deck.model_facts())
    return build_plan(model, await deck.gpu_inventory(), settings)


def _render(
    args: argparse.Namespace, profile: Profile | None, model: ModelFacts, gpus: GpuInventory
) -> str:
    settings = plan_settings(
        profile,
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_model_len=args.max_model_len,
        kv_cache_dtype=args.kv_cache_dtype,
        reserve_gib=args.reserve_gib,
    )
    lora_flags = [
        f"{flag}={value}"
        for flag, value in (
            ("--max-loras", args.max_loras),
            ("--max-lora-rank", args.max_lora_rank),
        )
        if value is not None
    ]
    if lora_flags:
        lora = lora_from_argv(["--enable-lora", *lora_flags], "servedeck plan")
        settings = replace(settings, lora=lora)
    plan = build_plan(model, gpus, settings)
    if args.json:
        return plan_json(plan)
    chosen = None
    if profile is not None and profile.model.path:
        m = profile.model
        chosen = Layout(m.tp, m.pp, m.dp, m.ep)
    return plan_markdown(plan, chosen, details=args.details)


def run_plan(args: argparse.Namespace) -> int:
    print(asyncio.run(_plan_text(args)), end="")
    return 0
