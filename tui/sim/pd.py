"""The simulator's prefill/decode role: --kv-transfer-config and the NIXL metric families.

vLLM takes the role as `--kv-transfer-config '{"kv_connector": "NixlConnector",
"kv_role": "kv_consumer"}'` (vllm/config/kv_transfer.py) and logs it in its non-default
args line as the KVTransferConfig repr. The families and labels are NixlPromMetrics'
(vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py; ["model_name", "engine"]),
and `vllm:num_requests_kv_fetch_by_stage` exists only on a KV consumer
(vllm/v1/metrics/loggers.py). A transfer is counted where the KV is read: the decode side.
`--kv-transfer-fault prefill-idle` routes nothing through the prefill engine (no transfer
while decode serves); `failing` fails every third transfer.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from tui.sim.engine import SimEngine

ROLES = ("kv_producer", "kv_consumer", "kv_both")
FAULTS = ("prefill-idle", "failing")
BYTES_PER_TRANSFER = 64 * 2**20


def add_pd_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kv-transfer-config", default=None, metavar="JSON")
    p.add_argument("--kv-transfer-fault", choices=FAULTS, default=None)


def pd_settings(a: argparse.Namespace) -> dict[str, Any]:
    """The ServerSettings fields these arguments set (a bad config exits with one line)."""
    role = None
    if a.kv_transfer_config:
        try:
            config = json.loads(a.kv_transfer_config)
        except ValueError as error:
            raise SystemExit(f"--kv-transfer-config: not JSON ({error})") from None
        role = config.get("kv_role") if isinstance(config, dict) else None
        if role not in ROLES:
            raise SystemExit(f"--kv-transfer-config: kv_role {role!r} is not one of {ROLES}")
    return {"kv_role": role, "kv_transfer_fault": a.kv_transfer_fault}


def args_repr(role: str | None) -> str:
    """The `'kv_transfer_config': KVTransferConfig(...)` entry of the non-default args line."""
    if role is None:
        return ""
    return (
        ", 'kv_transfer_config': KVTransferConfig(kv_connector='NixlConnector', "
        f"engine_id='sim', kv_buffer_device='cuda', kv_role='{role}', kv_port=14579, "
        "kv_connector_extra_config={}, kv_connector_module_path=None, "
        "enable_permute_local_kv=False, kv_load_failure_policy='fail')"
    )


class NixlCollector(Collector):
    """The NIXL families per engine, from the requests each engine took."""

    def __init__(self, engines: list[SimEngine], model: str, role: str, fault: str | None):
        self._engines, self._model, self._role, self._fault = engines, model, role, fault

    def _requests(self, engine: SimEngine) -> int:
        return sum(engine.success.values()) + len(engine.running)

    def collect(self) -> Iterator[Metric]:
        labels = ["model_name", "engine"]
        consumer = self._role in ("kv_consumer", "kv_both")
        counts = []
        for rank, engine in enumerate(self._engines):
            taken = self._requests(engine) if consumer else 0
            failed = taken // 3 if self._fault == "failing" else 0
            moved = 0 if self._fault == "prefill-idle" else taken - failed
            counts.append(([self._model, str(rank)], moved, failed))
        xfer = HistogramMetricFamily(
            "vllm:nixl_xfer_time_seconds",
            "Histogram of transfer duration for NIXL KV Cache transfers.",
            labels=labels,
        )
        sizes = HistogramMetricFamily(
            "vllm:nixl_bytes_transferred",
            "Histogram of bytes transferred per NIXL KV Cache transfers.",
            labels=labels,
        )
        fails = CounterMetricFamily(
            "vllm:nixl_num_failed_transfers",
            "Number of failed NIXL KV Cache transfers.",
            labels=labels,
        )
        expired = CounterMetricFamily(
            "vllm:nixl_num_kv_expired_reqs",
            "Number of requests that had their KV expire.",
            labels=labels,
        )
        for values, moved, failed in counts:
            xfer.add_metric(values, [("0.05", moved), ("+Inf", moved)], 0.02 * moved)
            sizes.add_metric(
                values,
                [(str(float(BYTES_PER_TRANSFER)), moved), ("+Inf", moved)],
                float(BYTES_PER_TRANSFER * moved),
            )
            fails.add_metric(values, failed)
            expired.add_metric(values, 0)
        yield from (xfer, sizes, fails, expired)
        if consumer:
            fetch = GaugeMetricFamily(
                "vllm:num_requests_kv_fetch_by_stage",
                "Number of waiting requests by async KV load stage.",
                labels=[*labels, "stage"],
            )
            for rank in range(len(self._engines)):
                for stage in ("waiting_to_start", "in_progress", "completed_waiting"):
                    fetch.add_metric([self._model, str(rank), stage], 0)
            yield fetch
