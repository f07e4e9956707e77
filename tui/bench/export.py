"""Export a level in `vllm bench serve --save-result` field names, so tools compare.

Only the fields servedeck computes are written, under exactly vLLM's keys;
servedeck's extras follow under names vLLM does not use.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from tui.bench.model import BenchResult, LatencyStats, LevelResult, percentile_word


def _latency_fields(prefix: str, stats: LatencyStats) -> dict[str, float]:
    """vLLM's keys: mean, median, std and `p{P}_{metric}_ms` for each asked percentile."""
    fields = {
        f"mean_{prefix}_ms": stats.mean_ms,
        f"median_{prefix}_ms": stats.median_ms,
        f"std_{prefix}_ms": stats.std_ms,
    }
    for percentile, value in stats.selected_ms():
        fields[f"p{percentile_word(percentile)}_{prefix}_ms"] = value
    return fields


def level_to_vllm(result: BenchResult, level: LevelResult) -> dict[str, Any]:
    """One level as vLLM's result JSON (plus servedeck's own keys after vLLM's)."""
    rate = level.request_rate
    record: dict[str, Any] = {
        "date": result.started_at,
        "backend": result.context.engine,
        "model_id": result.context.model,
        "num_prompts": level.num_requests,
        "request_rate": "inf" if rate is None or math.isinf(rate) else rate,
        "burstiness": level.burstiness,
        "max_concurrency": level.concurrency,
        "duration": level.duration_s,
        "completed": level.completed,
        "failed": level.failed,
        "total_input_tokens": level.total_input_tokens,
        "total_output_tokens": level.total_output_tokens,
        "request_throughput": level.request_throughput,
        "request_goodput": level.request_goodput,
        "output_throughput": level.output_throughput,
        "total_token_throughput": level.total_token_throughput,
        "errors": list(level.errors),
    }
    record.update(_latency_fields("ttft", level.ttft))
    record.update(_latency_fields("tpot", level.tpot))
    record.update(_latency_fields("itl", level.itl))
    record.update(_latency_fields("e2el", level.e2el))
    record["servedeck"] = {
        "partial": level.partial,
        "cancelled": level.cancelled,
        "output_tokens_source": level.output_tokens_source,
        "decode_tok_s_per_stream": level.decode_tok_s_per_stream,
        "prefill_tok_s_per_request": level.prefill_tok_s_per_request,
        "input_tok_s": level.input_tok_s,
        "intervals": None if level.uncertainty is None else asdict(level.uncertainty),
        "server": None if level.server is None else _server(level),
        "client_load": None if level.client_load is None else asdict(level.client_load),
        "client_bound": level.client_bound,
        "adapters": [asdict(adapter) for adapter in level.adapters],
        "repeat": _repeat(result, level),
        "context": {
            key: getattr(result.context, key) for key in result.context.__dataclass_fields__
        },
        "run_id": result.run_id,
        "preset": result.preset,
    }
    return record


def _repeat(result: BenchResult, level: LevelResult) -> dict[str, Any] | None:
    """`--repeat`: this level's figures across the runs (the summary's runs, settle and
    why it stopped beside them); None for a single run."""
    repeat = result.client.get("repeat")
    if not repeat:
        return None
    index = result.levels.index(level)
    levels = repeat.get("levels") or ()
    head = {key: value for key, value in repeat.items() if key != "levels"}
    return {**head, **(levels[index] if index < len(levels) else {})}


def _server(level: LevelResult) -> dict[str, Any]:
    server = level.server
    assert server is not None
    out = {key: getattr(server, key) for key in server.__dataclass_fields__}
    out["spec_acceptance_rate"] = server.spec_acceptance_rate  # None: no speculative decoding
    out["tokens_per_chunk"] = server.tokens_per_chunk
    return out


def result_to_vllm(result: BenchResult) -> list[dict[str, Any]]:
    return [level_to_vllm(result, level) for level in result.levels]


def result_to_json(result: BenchResult) -> str:
    """The run as a JSON array, one vLLM-style object per level."""
    return json.dumps(result_to_vllm(result), indent=2)
