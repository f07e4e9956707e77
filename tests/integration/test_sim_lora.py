"""LoRA adapters read as vLLM exposes them, through a real simulated server.

`--enable-lora --lora-modules sql=... chat=... --max-loras 2`: /v1/models lists both with
their parent, and `vllm:lora_requests_info` names the adapters with requests running or
waiting (vLLM exposes names, not counts). One engine two wide, three requests: sql runs,
chat waits.
"""

from __future__ import annotations

import asyncio

import httpx

from tests.support.sim_fixtures import module_sim_box
from tui.commands.status import status_report
from tui.core.config import Profile, ServiceConfig
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.serving.lora import LoraRequests, lora_line, lora_requests
from tui.serving.metrics import MetricsPoller, parse_metrics
from tui.serving.readiness import ReadinessProbe
from tui.sim.box import SimBox, SimServerOptions

OPTIONS = SimServerOptions(
    shards=2,
    decode_step_s=0.02,
    max_batch=2,
    extra_args=(
        *("--enable-lora", "--lora-modules", "sql=/adapters/sql", "chat=/adapters/chat"),
        *("--max-loras", "2"),
    ),
)


box = module_sim_box("lora", OPTIONS, seed=4)


def test_the_newest_label_set_is_the_present() -> None:
    page = (
        "# TYPE vllm:lora_requests_info gauge\n"
        'vllm:lora_requests_info{max_lora="4",running_lora_adapters="a,b",'
        'waiting_lora_adapters=""} 100.0\n'
        'vllm:lora_requests_info{max_lora="4",running_lora_adapters="b",'
        'waiting_lora_adapters="c"} 200.0\n'
    )
    assert lora_requests(parse_metrics(page)) == LoraRequests(4, ("b",), ("c",))
    assert lora_requests(parse_metrics("vllm:num_requests_running 0\n")) is None
    assert lora_line(None) is None


def test_adapters_loaded_running_and_waiting(box: SimBox) -> None:
    async def scenario() -> tuple:
        async with httpx.AsyncClient(timeout=60) as client:

            def send(model: str) -> asyncio.Task:
                body = {"model": model, "prompt": "select", "max_tokens": 300}
                return asyncio.create_task(client.post(f"{box.base_url}/v1/completions", json=body))

            sent = [send("sql"), send("sql")]
            await asyncio.sleep(0.4)  # both sql requests hold the batch of two; chat waits
            sent.append(send("chat"))
            await asyncio.sleep(0.8)
            metrics = await MetricsPoller(box.base_url).poll(client)
            readiness = await ReadinessProbe(box.base_url).check(client=client)
            for task in sent:
                task.cancel()
            await asyncio.gather(*sent, return_exceptions=True)
            unknown = await client.post(
                f"{box.base_url}/v1/completions", json={"model": "nope", "prompt": "x"}
            )
        return metrics, readiness, unknown.status_code

    metrics, readiness, unknown = asyncio.run(scenario())
    assert readiness.adapters == ("sql", "chat")
    assert metrics.lora == LoraRequests(max_loras=2, running=("sql",), waiting=("chat",))
    assert lora_line(metrics.lora, readiness.adapters) == (
        "LoRA 2/2 loaded: sql, chat; running sql; waiting chat"
    )
    assert unknown == 404


def test_status_json_names_the_adapters(box: SimBox) -> None:
    service = ServiceConfig(base_url=box.base_url, log_file=str(box.log_path))
    deck = Deck(Profile(name="lora", service=service), LocalHost())
    report = asyncio.run(status_report(deck))
    assert report["readiness"]["adapters"] == ["sql", "chat"], report["readiness"]
    assert report["metrics"]["lora"] == {"max_loras": 2, "running": [], "waiting": []}
    assert report["lora"] == "LoRA 2/2 loaded: sql, chat; running -; waiting -"
