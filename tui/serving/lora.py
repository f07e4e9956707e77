"""LoRA adapters: which are loaded, and which have requests running or waiting.

vLLM writes no per-adapter count to /metrics: the gauge `vllm:lora_requests_info`
(PrometheusStatLogger in vllm/v1/metrics/loggers.py) carries the adapters' names as
comma-joined labels `running_lora_adapters` and `waiting_lora_adapters` with `max_lora`,
set to the current time at each stats update, so the label set with the newest value is
the present. The loaded adapters are the `/v1/models` entries with a `parent` (the base
model; vllm/entrypoints/openai/models/serving.py). What neither says stays unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.serving.metrics import MetricsScrape

LORA_INFO = "vllm:lora_requests_info"
LORA_FAMILIES = frozenset((LORA_INFO,))


@dataclass(frozen=True, slots=True)
class LoraRequests:
    """The newest `vllm:lora_requests_info` label set."""

    max_loras: int | None
    running: tuple[str, ...]  # adapters with at least one request running
    waiting: tuple[str, ...]  # adapters with at least one request waiting


def _names(value: str) -> tuple[str, ...]:
    return tuple(name for name in value.split(",") if name)


def lora_requests(scrape: MetricsScrape) -> LoraRequests | None:
    """None when the server exposes no LoRA gauge (LoRA off, or not vLLM)."""
    samples = scrape.labelled(LORA_INFO)
    if not samples:
        return None
    labels, _ = max(samples, key=lambda sample: sample[1])
    limit = labels.get("max_lora", "")
    return LoraRequests(
        max_loras=int(limit) if limit.isdigit() else None,
        running=_names(labels.get("running_lora_adapters", "")),
        waiting=_names(labels.get("waiting_lora_adapters", "")),
    )


def adapters_from_models(data: Any) -> tuple[tuple[str, str], ...]:
    """(adapter, base model) of each `/v1/models` entry that names a parent."""
    if not isinstance(data, list):
        return ()
    return tuple(
        (str(entry.get("id", "?")), str(entry["parent"]))
        for entry in data
        if isinstance(entry, dict) and entry.get("parent")
    )


def lora_line(requests: LoraRequests | None, loaded: tuple[str, ...] = ()) -> str | None:
    """`LoRA 2/4 loaded: a, b; running a; waiting b`; None without LoRA."""
    if requests is None and not loaded:
        return None
    limit = requests.max_loras if requests is not None else None
    head = f"LoRA {len(loaded)}/{'n/a' if limit is None else limit} loaded"
    parts = [f"{head}: {', '.join(loaded)}" if loaded else head]
    if requests is not None:
        parts.append(f"running {', '.join(requests.running) or '-'}")
        parts.append(f"waiting {', '.join(requests.waiting) or '-'}")
    return "; ".join(parts)
