"""The simulator's vLLM 2026 engine options and its LoRA adapters.

Arguments as vLLM names them: --data-parallel-size, --num-speculative-tokens (vLLM takes
it in --speculative-config), --enable-sleep-mode, --enable-lora, --lora-modules
name=path ..., --max-loras. Adapters are listed by /v1/models with `parent` (the base
model; vllm/entrypoints/openai/models/serving.py), a request names one as its model, and
/metrics carries `vllm:lora_requests_info` as vLLM writes it (vllm/v1/metrics/loggers.py:
labels max_lora, running_lora_adapters, waiting_lora_adapters, names comma-joined, the
value the time of the update).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tui.sim.pd import add_pd_args, pd_settings

if TYPE_CHECKING:
    from tui.sim.engine import SimEngine
    from tui.sim.spec import ServerSettings


def add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-parallel-size", type=int, default=1)
    p.add_argument("--starve-engine", type=int, default=None)
    p.add_argument("--num-speculative-tokens", type=int, default=0)
    p.add_argument("--spec-acceptance", type=float, default=0.7)
    p.add_argument("--enable-sleep-mode", action="store_true")
    p.add_argument("--enable-lora", action="store_true")
    p.add_argument("--lora-modules", nargs="*", default=[], metavar="NAME=PATH")
    p.add_argument("--max-loras", type=int, default=1)
    add_pd_args(p)


def engine_settings(a: argparse.Namespace) -> dict[str, Any]:
    """The ServerSettings fields these arguments set."""
    modules = []
    for item in a.lora_modules if a.enable_lora else ():
        name, _, path = item.partition("=")
        if not name or not path:
            raise SystemExit(f"--lora-modules: {item!r} is not NAME=PATH")
        modules.append((name, path))
    return {
        "data_parallel_size": max(a.data_parallel_size, 1),
        "starved_engine": a.starve_engine,
        "num_speculative_tokens": max(a.num_speculative_tokens, 0),
        "spec_acceptance": a.spec_acceptance,
        "sleep_mode": a.enable_sleep_mode,
        "lora_modules": tuple(modules),
        "max_loras": max(a.max_loras, 1),
        **pd_settings(a),
    }


def adapter_names(settings: ServerSettings) -> tuple[str, ...]:
    return tuple(name for name, _ in settings.lora_modules)


def adapter_entries(settings: ServerSettings, created: int) -> list[dict[str, Any]]:
    """The /v1/models entries of the adapters, as vLLM lists them."""
    return [
        {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": path,
            "parent": settings.served_model_name,
            "max_model_len": None,
            "permission": [],
        }
        for name, path in settings.lora_modules
    ]


class LoraCollector(Collector):
    """`vllm:lora_requests_info` from the engines' running and waiting requests."""

    def __init__(self, engines: list[SimEngine], max_loras: int) -> None:
        self._engines = engines
        self._max_loras = max_loras

    def collect(self) -> Iterator[Metric]:
        running = {r.lora for e in self._engines for r in e.running if r.lora}
        waiting = {r.lora for e in self._engines for r in e.waiting if r.lora}
        family = GaugeMetricFamily(
            "vllm:lora_requests_info",
            "Running stats on lora requests.",
            labels=["max_lora", "waiting_lora_adapters", "running_lora_adapters"],
        )
        family.add_metric(
            [str(self._max_loras), ",".join(sorted(waiting)), ",".join(sorted(running))],
            time.time(),
        )
        yield family
