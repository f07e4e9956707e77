"""Prefill/decode roles through a real simulated server: its log, its /metrics, the warning.

A real SimBox started as a decode engine (`kv_role` kv_consumer) whose prefill engine takes
nothing (`--kv-transfer-fault prefill-idle`): it serves, its NIXL transfer count stays put,
and servedeck's poller, reading vLLM's family names, says the prefill engine handled none.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.support.sim_fixtures import module_sim_box
from tui.serving.disagg import pd_warnings, role_from_log, role_from_metrics
from tui.serving.metrics import MetricsPoller, ServerMetrics
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.spec import SERVED_MODEL_NAME

CONFIG = '{"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}'
OPTIONS = SimServerOptions(
    shards=4,
    decode_step_s=0.02,
    max_batch=2,
    log_interval_s=1.0,
    extra_args=("--kv-transfer-config", CONFIG, "--kv-transfer-fault", "prefill-idle"),
)


pd_box = module_sim_box("pd", OPTIONS, seed=3, load_seconds=2.0)


async def _while_busy(box: SimBox) -> ServerMetrics:
    poller = MetricsPoller(box.base_url)
    async with httpx.AsyncClient(timeout=60) as client:
        body = {"model": SERVED_MODEL_NAME, "prompt": "hello there", "max_tokens": 400}
        sent = [
            asyncio.create_task(client.post(f"{box.base_url}/v1/completions", json=body))
            for _ in range(3)
        ]
        await asyncio.sleep(0.6)
        await poller.poll(client)
        await asyncio.sleep(0.6)
        second = await poller.poll(client)
        for task in sent:
            task.cancel()
        await asyncio.gather(*sent, return_exceptions=True)
    return second


def test_the_log_says_the_role_as_vllm_writes_it(pd_box: SimBox) -> None:
    assert role_from_log(Path(pd_box.log_path).read_text().splitlines()) == "decode"


def test_decode_serving_with_an_idle_prefill_engine_is_a_warning(pd_box: SimBox) -> None:
    metrics = asyncio.run(_while_busy(pd_box))
    (row,) = metrics.kv_transfers
    assert (row.engine, row.consumer, row.transfers_in_interval, row.failed_total) == (
        "0",
        True,
        0,
        0,
    )
    assert role_from_metrics(metrics.kv_transfers) == "decode"
    (warning,) = pd_warnings("decode", metrics.kv_transfers, metrics.engines)
    assert warning.startswith("prefill engine handled 0 requests: decode engine 0 serves")
