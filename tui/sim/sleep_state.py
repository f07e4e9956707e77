"""The simulator's `vllm:engine_sleep_state` gauge, as vLLM writes it.

vllm/v1/metrics/loggers.py (PrometheusStatLogger, record_sleep_state): one sample per
engine and `sleep_state` label, awake / weights_offloaded / discard_all, each 0 or 1
(awake = 0 while asleep; weights_offloaded = 1 at level 1, discard_all = 1 at level 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

_STATES = ("awake", "weights_offloaded", "discard_all")


class SleepStateCollector(Collector):
    """Reads the server's sleep level (0 awake, 1, 2) at scrape time."""

    def __init__(self, level: Callable[[], int], engines: int, model_name: str) -> None:
        self._level = level
        self._engines = engines
        self._model = model_name

    def collect(self) -> Iterator[Metric]:
        level = self._level()
        values = {"awake": int(level == 0), "weights_offloaded": int(level == 1)}
        values["discard_all"] = int(level == 2)
        family = GaugeMetricFamily(
            "vllm:engine_sleep_state",
            "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine "
            "is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep "
            "level 2.",
            labels=["engine", "model_name", "sleep_state"],
        )
        for rank in range(self._engines):
            for state in _STATES:
                family.add_metric([str(rank), self._model, state], values[state])
        yield family
