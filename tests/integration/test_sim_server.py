"""The simulated vLLM server against real vLLM captures, over real HTTP."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tui.sim import tokens
from tui.sim.box import SimBox

CAPTURES = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"


def _capture(name: str) -> str:
    """A response captured from a real vLLM 0.32 server (see the folder's README)."""
    return (CAPTURES / name).read_text()


def _sse_events(body: str) -> list[str]:
    """`data:` payloads of an SSE body, checking the blank-line framing on the way."""
    assert body.endswith("\n\n"), "every event ends with a blank line"
    events = body[:-2].split("\n\n")
    assert all(event.startswith("data: ") for event in events)
    return [event[len("data: ") :] for event in events]


def _http_body(raw: str) -> str:
    return raw.split("\n\n", 1)[1]


def _stream(box: SimBox, path: str, payload: dict[str, object]) -> str:
    with httpx.Client(timeout=30) as client:
        response = client.post(box.base_url + path, json=payload)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    return response.text


def test_sse_framing_matches_real_vllm(serving_box: SimBox) -> None:
    real = _sse_events(_http_body(_capture("sse.txt")))
    ours = _sse_events(
        _stream(
            serving_box,
            "/v1/completions",
            {
                "model": "kimi-k2.5-int4",
                "prompt": "Tell me about GPUs",
                "max_tokens": 32,
                "stream": True,
                "stream_options": {"include_usage": True},
                "ignore_eos": True,
            },
        )
    )
    assert real[-1] == ours[-1] == "[DONE]"
    real_chunks = [json.loads(e) for e in real[:-1]]
    our_chunks = [json.loads(e) for e in ours[:-1]]
    assert len(our_chunks) == len(real_chunks) == 33  # 32 tokens + usage
    for real_chunk, our_chunk in zip(real_chunks, our_chunks, strict=True):
        assert list(our_chunk) == list(real_chunk)
        if real_chunk["choices"]:
            assert list(our_chunk["choices"][0]) == list(real_chunk["choices"][0])
            assert (
                our_chunk["choices"][0]["finish_reason"]
                == real_chunk["choices"][0]["finish_reason"]
            )
        else:
            assert our_chunk["choices"] == []
            assert list(our_chunk["usage"]) == list(real_chunk["usage"])
    usage = our_chunks[-1]["usage"]
    assert usage["completion_tokens"] == 32
    assert usage["prompt_tokens"] == tokens.count_tokens("Tell me about GPUs")
    text = "".join(chunk["choices"][0]["text"] for chunk in our_chunks[:-1])
    assert tokens.count_tokens(text) == 32, "tokenizing the output gives the streamed count"


def test_chat_stream_and_non_streaming(serving_box: SimBox) -> None:
    events = _sse_events(
        _stream(
            serving_box,
            "/v1/chat/completions",
            {
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 5,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        )
    )
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    contents = [c["choices"][0]["delta"]["content"] for c in chunks[1:-1]]
    assert len(contents) == 5 and all(contents)
    assert chunks[-1]["usage"]["completion_tokens"] == 5
    with httpx.Client(timeout=30) as client:
        full = client.post(
            serving_box.base_url + "/v1/completions", json={"prompt": "abcd" * 10, "max_tokens": 7}
        ).json()
    assert full["object"] == "text_completion"
    assert full["usage"] == {"prompt_tokens": 10, "total_tokens": 17, "completion_tokens": 7}
    assert tokens.count_tokens(full["choices"][0]["text"]) == 7


def test_small_endpoints_have_vllm_shapes(serving_box: SimBox) -> None:
    captured = _capture("endpoints.txt")
    real_models = json.loads(
        captured.split("== GET /v1/models")[1].split("\n\n", 1)[1].split("\n")[0]
    )
    with httpx.Client(base_url=serving_box.base_url, timeout=30) as client:
        assert client.get("/health").status_code == 200
        assert client.get("/ping").status_code == 200
        assert client.get("/version").json() == {"version": "0.33.0"}
        models = client.get("/v1/models")
        unknown = client.post("/v1/completions", json={"model": "nope", "prompt": "x"})
        ids = client.post("/tokenize", json={"prompt": "the model is fast"}).json()
        text = client.post("/detokenize", json={"tokens": ids["tokens"]}).json()
    assert b'"object":"list"' in models.content, "compact JSON like vLLM"
    ours = models.json()
    assert list(ours) == list(real_models)
    assert list(ours["data"][0]) == list(real_models["data"][0])
    assert list(ours["data"][0]["permission"][0]) == list(real_models["data"][0]["permission"][0])
    assert ours["data"][0]["id"] == "kimi-k2.5-int4"
    assert unknown.status_code == 404 and "does not exist" in unknown.json()["error"]["message"]
    assert ids["count"] == tokens.count_tokens("the model is fast") == len(ids["tokens"])
    assert text["prompt"] == "".join(tokens.detokenize(ids["tokens"]))


def _families(text: str) -> dict[str, object]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def _value(families: dict[str, object], name: str, suffix: str = "") -> float:
    family = families[name]
    return sum(s.value for s in family.samples if s.name == name + suffix)  # type: ignore[attr-defined]


def test_metrics_parse_with_vllm_names_and_move(serving_box: SimBox) -> None:
    real = _families(_capture("metrics.txt"))
    with httpx.Client(base_url=serving_box.base_url, timeout=30) as client:
        before = _families(client.get("/metrics").text)
        client.post("/v1/completions", json={"prompt": "x" * 40, "max_tokens": 9})
        after = _families(client.get("/metrics").text)
    ours = {name for name in after if name.startswith("vllm:")}
    assert ours <= set(real), sorted(ours - set(real))
    wanted = {
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:prompt_tokens",
        "vllm:generation_tokens",
        "vllm:time_to_first_token_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:e2e_request_latency_seconds",
        "vllm:request_queue_time_seconds",
        "vllm:request_prefill_time_seconds",
        "vllm:request_decode_time_seconds",
        "vllm:num_preemptions",
        "vllm:request_success",
    }
    assert wanted <= ours
    assert (
        _value(after, "vllm:generation_tokens", "_total")
        - _value(before, "vllm:generation_tokens", "_total")
        == 9
    )
    assert (
        _value(after, "vllm:prompt_tokens", "_total")
        - _value(before, "vllm:prompt_tokens", "_total")
        == 10
    )
    assert (
        _value(after, "vllm:time_to_first_token_seconds", "_count")
        == _value(before, "vllm:time_to_first_token_seconds", "_count") + 1
    )


def test_ground_truth_matches_what_a_client_sees(serving_box: SimBox) -> None:
    """Sequential requests: the server's recorded TTFT and E2E agree with the client's clock."""
    observed: list[tuple[str, float, float]] = []
    delivered: dict[str, tuple[float, float]] = {}  # client's wall time of first, last token
    with httpx.Client(base_url=serving_box.base_url, timeout=30) as client:
        since = len(client.get("/_sim/truth").json()["requests"])
        for prompt_tokens in (150, 300, 600):
            payload = {"prompt": "abcd" * prompt_tokens, "max_tokens": 20, "stream": True}
            sent = time.time()
            first = last = 0.0
            with client.stream("POST", "/v1/completions", json=payload) as response:
                for line in response.iter_lines():
                    if line.startswith("data: {"):
                        chunk = json.loads(line[6:])
                        if chunk["choices"]:
                            last = time.time()
                            first = first or last
                            request_id = chunk["id"].removeprefix("cmpl-")
            observed.append((request_id, first - sent, last - sent))
            delivered[request_id] = (first, last)
        truth = {r["request_id"]: r for r in client.get("/_sim/truth").json()["requests"]}
    assert len(truth) >= since + 3
    for request_id, ttft, e2e in observed:
        record = truth[request_id]
        true_ttft = record["first_token_s"] - record["arrival_s"]
        true_e2e = record["last_token_s"] - record["arrival_s"]
        # Loopback and HTTP parsing add a little; a loaded 2-core box adds more.
        assert abs(ttft - true_ttft) <= 0.02 + 0.2 * true_ttft, (ttft, true_ttft)
        assert abs(e2e - true_e2e) <= 0.03 + 0.2 * true_e2e, (e2e, true_e2e)
        assert record["output_tokens"] == 20
        # The HTTP layer wrote each token after its step ended, before the client read it.
        first_read, last_read = delivered[request_id]
        assert record["first_token_s"] <= record["first_sent_s"] <= first_read
        assert record["last_token_s"] <= record["last_sent_s"] <= last_read
    # The model: prefill time is prompt_tokens / prefill_tok_s (3000 tok/s by default).
    longest = truth[observed[-1][0]]
    assert longest["first_token_s"] - longest["scheduled_s"] == pytest.approx(0.2, rel=0.25)


LOAD_PATTERNS = [
    r"\(APIServer pid=\d+\) INFO \d\d-\d\d \d\d:\d\d:\d\d \[[\w.]+:\d+\] vLLM server version "
    r"(\S+), serving model (\S+)",
    r"Starting to load model (\S+)\.\.\.",
    r"^Loading safetensors checkpoint shards:\s+(\d+)% Completed \| (\d+)/(\d+) "
    r"\[(\d\d:\d\d)<(\d\d:\d\d|\?), ",
    r"Loading weights took ([\d.]+) seconds",
    r"Model loading took ([\d.]+) GiB memory and ([\d.]+) seconds",
    r"torch\.compile took ([\d.]+) s in total",
    r"Available KV cache memory: ([\d.]+) GiB",
    r"GPU KV cache size: ([\d,]+) tokens",
    r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x",
    r"Capturing CUDA graphs \(",
    r"Graph capturing finished in (\d+) secs, took ([\d.]+) GiB",
    r"Starting vLLM server on (http://\S+)",
    r"Application startup complete\.",
]


def test_load_log_has_vllm_phases_in_order(serving_box: SimBox) -> None:
    lines = serving_box.log_path.read_text().splitlines()
    position = -1
    for pattern in LOAD_PATTERNS:
        hits = [i for i, line in enumerate(lines) if re.search(pattern, line)]
        assert hits, pattern
        assert hits[0] > position, f"{pattern} out of order"
        position = hits[0]
    bars = [re.search(LOAD_PATTERNS[2], line) for line in lines]
    shard_counts = [int(m.group(2)) for m in bars if m]
    assert shard_counts == list(range(17)), "one bar line per shard, 0..16"
    assert serving_box.base_url in "\n".join(lines)


def test_runtime_faults(serving_box: SimBox) -> None:
    with httpx.Client(base_url=serving_box.base_url, timeout=30) as client:
        assert client.post("/_sim/fault", json={"http_5xx_rate": 1.0}).status_code == 200
        failed = client.post("/v1/completions", json={"prompt": "x", "max_tokens": 2})
        client.post("/_sim/fault", json={"http_5xx_rate": 0.0, "cut_stream_after_tokens": 3})
        seen: list[str] = []
        with (
            pytest.raises(httpx.HTTPError),
            client.stream(
                "POST", "/v1/completions", json={"prompt": "x", "max_tokens": 50, "stream": True}
            ) as resp,
        ):
            seen.extend(line for line in resp.iter_lines() if line.startswith("data:"))
        client.post("/_sim/fault", json={"cut_stream_after_tokens": None})
        ok = client.post("/v1/completions", json={"prompt": "x", "max_tokens": 2})
    assert failed.status_code == 500
    assert len(seen) == 3
    assert ok.status_code == 200


def test_engine_stats_line_while_busy(serving_box: SimBox) -> None:
    """vLLM's periodic `Engine 000:` line appears once there is traffic (interval 1 s here)."""
    pattern = re.compile(
        r"\[loggers\.py:\d+\] Engine 000: Avg prompt throughput: ([\d.]+) tokens/s, "
        r"Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs, "
        r"Waiting: (\d+) reqs, GPU KV cache usage: ([\d.]+)%, Prefix cache hit rate: ([\d.]+)%"
    )
    with httpx.Client(base_url=serving_box.base_url, timeout=30) as client:
        client.post("/v1/completions", json={"prompt": "x" * 400, "max_tokens": 300})
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        hits = [pattern.search(line) for line in serving_box.log_path.read_text().splitlines()]
        busy = [m for m in hits if m and float(m.group(2)) > 0]
        if busy:
            break
        time.sleep(0.2)
    assert busy, "no Engine 000 line with generation throughput"
