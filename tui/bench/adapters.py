"""LoRA adapters of a run: `--lora NAME[:W],...`, each request's model, per-adapter figures.

Requests go across the adapters in a fixed order (a smooth weighted round robin:
`sql,chat` alternates, `sql:3,chat:1` sends three sql for each chat, spread out), so
every level and every shard of a level sees the asked shares from its first requests.
An adapter the server does not list in /v1/models is refused before the run starts:
vLLM would answer each of its requests 404, and the run would measure errors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tui.bench.metrics import latency_stats, output_tokens_of, tpot_of
from tui.bench.model import AdapterLevel, RequestOutcome
from tui.serving.lora import adapters_from_models

_MAX_CYCLE = 10_000  # requests before the order repeats, for weights with many decimals


class AdapterSpecError(ValueError):
    """A malformed --lora list, or an adapter the server does not serve."""


@dataclass(frozen=True, slots=True)
class Adapter:
    name: str
    weight: float


def parse_adapters(text: str) -> tuple[Adapter, ...]:
    """`sql,chat:3` as adapters with weights (1 when not given); a bad item is one line."""
    found: list[Adapter] = []
    for item in (part.strip() for part in text.split(",")):
        name, _, weight_text = item.partition(":")
        name = name.strip()
        if not name:
            raise AdapterSpecError(f"--lora {text!r}: an empty adapter name")
        try:
            weight = float(weight_text) if weight_text.strip() else 1.0
        except ValueError:
            raise AdapterSpecError(f"--lora {item!r}: the weight must be a number") from None
        if not (math.isfinite(weight) and weight > 0):
            raise AdapterSpecError(f"--lora {item!r}: the weight must be positive")
        if any(adapter.name == name for adapter in found):
            raise AdapterSpecError(f"--lora {text!r}: {name} is named twice")
        found.append(Adapter(name, weight))
    return tuple(found)


@lru_cache(maxsize=8)
def adapter_cycle(text: str) -> tuple[str, ...]:
    """One period of the request order: smooth weighted round robin over integer weights
    (the asked weights scaled to integers, at most `_MAX_CYCLE` requests a period)."""
    adapters = parse_adapters(text)
    scale = 1
    while scale < 1000 and any(
        abs(a.weight * scale - round(a.weight * scale)) > 1e-9 for a in adapters
    ):
        scale *= 10
    weights = [max(1, round(a.weight * scale)) for a in adapters]
    divisor = math.gcd(*weights)
    weights = [w // divisor for w in weights]
    while sum(weights) > _MAX_CYCLE:
        weights = [max(1, w // 2) for w in weights]
    total, current, order = sum(weights), [0] * len(weights), []
    for _ in range(total):
        current = [c + w for c, w in zip(current, weights, strict=True)]
        pick = max(range(len(current)), key=lambda i: (current[i], -i))
        current[pick] -= total
        order.append(adapters[pick].name)
    return tuple(order)


def adapter_for(text: str, index: int) -> str:
    """The adapter request `index` of a level names as its model."""
    cycle = adapter_cycle(text)
    return cycle[index % len(cycle)]


def check_served(text: str, models: Any, base_url: str) -> None:
    """Refuse an adapter that the server's /v1/models `data` does not list (vLLM lists
    each loaded adapter with its `parent`; a listed model id is accepted as well)."""
    served = {name for name, _ in adapters_from_models(models)}
    served |= (
        {str(m.get("id")) for m in models if isinstance(m, dict)}
        if isinstance(models, list)
        else set()
    )
    missing = [a.name for a in parse_adapters(text) if a.name not in served]
    if missing:
        listed = ", ".join(sorted(name for name, _ in adapters_from_models(models))) or "none"
        raise AdapterSpecError(
            f"--lora {missing[0]}: not served by {base_url} (/v1/models lists adapters: {listed})"
        )


def adapter_levels(
    outcomes: Sequence[RequestOutcome], text: str, duration_s: float, percentiles: Sequence[float]
) -> tuple[AdapterLevel, ...]:
    """Each adapter's share of a level: requests, TTFT and TPOT, and output tok/s over the
    level's duration (so the adapters' tok/s add up to the level's)."""
    found = []
    for adapter in parse_adapters(text):
        mine = [o for o in outcomes if o.model == adapter.name]
        good = [o for o in mine if o.success]
        tokens = sum(output_tokens_of(o) for o in good)
        found.append(
            AdapterLevel(
                name=adapter.name,
                completed=len(good),
                failed=len(mine) - len(good),
                output_throughput=tokens / duration_s if duration_s > 0 and good else None,
                ttft=latency_stats([o.ttft_s for o in good], percentiles),
                tpot=latency_stats([t for o in good if (t := tpot_of(o)) is not None], percentiles),
            )
        )
    return tuple(found)


def adapter_lines(adapters: Sequence[AdapterLevel]) -> list[str]:
    """One line per adapter under a level's report; n/a where no request completed."""
    lines = []
    for a in adapters:
        tok_s = "n/a" if a.output_throughput is None else f"{a.output_throughput:,.1f}"
        ttft = f"{a.ttft.median_ms:,.1f}" if a.ttft.count else "n/a"
        tpot = f"{a.tpot.median_ms:,.1f}" if a.tpot.count else "n/a"
        lines.append(
            f"    LoRA {a.name}: {a.completed} ok, {a.failed} failed, out {tok_s} tok/s, "
            f"TTFT p50 {ttft} ms, TPOT p50 {tpot} ms"
        )
    return lines
