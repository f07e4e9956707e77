"""Markdown and JSON renderings of a Plan (the state summary embeds the Markdown)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tui.plan.layout import FITS, Layout, LayoutResult, Plan, gib

_MARK = {"fits": "fits", "too big": "**too big**", "invalid": "**invalid**"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def best_layout(plan: Plan) -> LayoutResult | None:
    """The fitting layout with the most KV room per GPU, preferring fewer GPUs on a tie."""
    fitting = [r for r in plan.layouts if r.verdict == FITS]
    return max(fitting, key=lambda r: (r.full_length_requests, -r.layout.gpus), default=None)


def layout_details(result: LayoutResult) -> list[str]:
    """The arithmetic and checks of one layout, as Markdown lines."""
    lines = [f"### {result.layout.label}: {result.verdict}", "", f"{result.reason}", ""]
    lines += [f"- {line}" for line in result.arithmetic]
    for check in result.checks:
        mark = "ok" if check.ok else ("FAILS" if check.fatal else "note")
        lines.append(f"- check {check.name}: {check.arithmetic} ({mark})")
    lines += [f"- {hit.severity}: {hit.message}" for hit in result.warnings]
    return [*lines, ""]


def plan_markdown(plan: Plan, chosen: Layout | None = None, details: bool = False) -> str:
    """The plan as Markdown: facts, the layout table, warnings, and the chosen layout's math."""
    arch = plan.arch
    weights = plan.weights
    lines = [
        f"## Deployment plan: {plan.model_name}",
        "",
        f"- Model: {arch.name} ({arch.model_type}), {arch.num_layers} layers, "
        f"{arch.num_attention_heads} heads, "
        + (f"{arch.num_experts} experts top-{arch.experts_per_token}, " if arch.is_moe else "")
        + f"weights {arch.quant.label}",
        f"- Checkpoint: {gib(weights.total_bytes)} ({weights.source}"
        + (f", {weights.files} files, {weights.tensors:,} tensors" if weights.files else "")
        + ")",
        f"- GPUs: {plan.gpus.describe()} ({plan.gpus.source})",
        f"- Settings: gpu_memory_utilization {plan.settings.gpu_memory_utilization:.2f}, "
        f"max_model_len {plan.max_model_len:,}, KV cache {plan.kv_cache}, "
        f"runtime reserve {gib(plan.settings.reserve_bytes)} per GPU" + _lora_words(plan),
        "",
        "| layout | GPUs | weights/GPU | KV room/GPU | KV tokens | full-length | verdict | why |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for result in plan.layouts:
        label = result.layout.label
        if chosen is not None and result.layout == chosen:
            label = f"**{label}** (chosen)"
        lines.append(
            f"| {label} | {result.layout.gpus} | {gib(result.weight_bytes_per_gpu)} | "
            f"{gib(max(result.kv_room_bytes_per_gpu, 0))} | {result.max_tokens:,} | "
            f"{result.full_length_requests} | {_MARK[result.verdict]} | {_cell(result.reason)} |"
        )
    lines.append("")
    if plan.warnings:
        lines += ["Warnings:", ""]
        lines += [
            f"- {hit.severity}: {hit.message} (source: {hit.source})" for hit in plan.warnings
        ]
        lines.append("")
    focus = plan.find(chosen.tp, chosen.ep, chosen.pp, chosen.dp) if chosen else best_layout(plan)
    shown = plan.layouts if details else ([focus] if focus else [])
    for result in shown:
        lines += layout_details(result)
    return "\n".join(lines).rstrip() + "\n"


def _lora_words(plan: Plan) -> str:
    lora = plan.settings.lora
    if lora is None:
        return ""
    return (
        f", LoRA --max-loras {lora.max_loras} --max-lora-rank {lora.max_lora_rank} "
        f"(slots out of the KV room)"
    )


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, Layout):
            data["label"] = value.label
            data["gpus"] = value.gpus
        return data
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def plan_json(plan: Plan) -> str:
    """The whole plan as JSON (every dataclass field), for scripts."""
    data = _plain(plan)
    data["weights"]["total_bytes"] = plan.weights.total_bytes
    return json.dumps(data, indent=2)
