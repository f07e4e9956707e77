"""A small OpenAI-style streaming server for the benchmark tests (a real HTTP process).

It streams exactly vLLM 0.32's SSE framing (fixtures sse.txt): one token per
`data:` event, then a usage chunk with `"choices":[]`, then `data: [DONE]`.
Behaviour is chosen per request by the model name's query string, e.g.
`m?ttft_ms=40&itl_ms=5&fail_every=3`:
  ttft_ms, itl_ms     delay before the first token and between tokens
  fail_every=N        every Nth request answers HTTP 503
  cut_every=N         every Nth request's stream is cut after 3 tokens (no [DONE])
  stall_every=N       every Nth request stops sending after 3 tokens (until the client gives up)
  no_usage=1          no usage chunk
  batch=N             N tokens per write (fast mode for the client's ceiling)
Also /v1/models, /version, /tokenize (one token per word plus BOS, when started
with --tokenize; a JSON list with --tokenize-list), /metrics (vLLM names), /_seen (the
last Authorization header, so tests can check the key arrived as Bearer) and /_tokens
(tokens written so far, live).

Run: python tests/support/sse_server.py [--tokenize]  (prints the port on stdout)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from urllib.parse import parse_qs

from aiohttp import web

_FRAME = (
    '{"id":"cmpl-test","object":"text_completion","created":1795969919,"model":"%s",'
    '"choices":[{"index":0,"text":"%s","logprobs":null,"finish_reason":%s,'
    '"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}'
)
_CHAT_FRAME = (
    '{"id":"chatcmpl-test","object":"chat.completion.chunk","created":1795969919,"model":"%s",'
    '"choices":[{"index":0,"delta":{"content":"%s"},"logprobs":null,"finish_reason":%s}]}'
)
_USAGE = (
    '{"id":"cmpl-test","object":"text_completion","created":1795969919,"model":"%s",'
    '"choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d},'
    '"system_fingerprint":"vllm-0.32.0-test"}'
)


class State:
    def __init__(self) -> None:
        self.counter = itertools.count(1)
        self.last_auth = ""
        self.queue_s = 0.0
        self.prefill_s = 0.0
        self.decode_s = 0.0
        self.requests = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.tokens_written = 0  # live, for the client-ceiling script's sampler


def _options(model: str) -> dict[str, float]:
    _, _, query = model.partition("?")
    return {key: float(values[0]) for key, values in parse_qs(query).items()}


async def completions(request: web.Request) -> web.StreamResponse:
    state: State = request.app["state"]
    number = next(state.counter)
    state.last_auth = request.headers.get("Authorization", "")
    body = await request.json()
    chat = request.path.endswith("/chat/completions")
    model = body["model"]
    opts = _options(model)
    prompt = body["messages"][0]["content"] if chat else body["prompt"]
    prompt_tokens = len(prompt.split()) + 1
    max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)

    def every(key: str) -> bool:
        n = int(opts.get(key, 0))
        return n > 0 and number % n == 0

    if every("fail_every"):
        return web.json_response({"error": {"message": "overloaded"}}, status=503)
    response = web.StreamResponse(headers={"content-type": "text/event-stream; charset=utf-8"})
    await response.prepare(request)
    started = time.perf_counter()
    await asyncio.sleep(opts.get("ttft_ms", 0.0) / 1000)
    prefill_done = time.perf_counter()
    itl = opts.get("itl_ms", 0.0) / 1000
    batch = max(1, int(opts.get("batch", 1)))
    frame = _CHAT_FRAME if chat else _FRAME
    name = model.replace('"', "")
    pending: list[bytes] = []
    for index in range(max_tokens):
        if index and (every("cut_every") or every("stall_every")) and index == 3:
            if every("stall_every"):
                await asyncio.sleep(3600)
            request.transport.close()  # type: ignore[union-attr]
            return response
        if index and itl:
            await asyncio.sleep(itl)
        finish = '"length"' if index == max_tokens - 1 else "null"
        pending.append(b"data: " + (frame % (name, "tok", finish)).encode() + b"\n\n")
        if len(pending) >= batch or index == max_tokens - 1:
            await response.write(b"".join(pending))
            state.tokens_written += len(pending)
            pending.clear()
    tail = b""
    if not opts.get("no_usage"):
        usage = _USAGE % (name, prompt_tokens, prompt_tokens + max_tokens, max_tokens)
        tail += b"data: " + usage.encode() + b"\n\n"
    await response.write(tail + b"data: [DONE]\n\n")
    await response.write_eof()
    finished = time.perf_counter()
    state.requests += 1
    state.prefill_s += prefill_done - started
    state.decode_s += finished - prefill_done
    state.prompt_tokens += prompt_tokens
    state.generation_tokens += max_tokens
    return response


async def metrics(request: web.Request) -> web.Response:
    state: State = request.app["state"]
    label = '{engine="0",model_name="test"}'
    lines = [
        "# TYPE vllm:prompt_tokens counter",
        f"vllm:prompt_tokens_total{label} {float(state.prompt_tokens)}",
        "# TYPE vllm:generation_tokens counter",
        f"vllm:generation_tokens_total{label} {float(state.generation_tokens)}",
    ]
    for stem, total in (
        ("queue", state.queue_s),
        ("prefill", state.prefill_s),
        ("decode", state.decode_s),
    ):
        name = f"vllm:request_{stem}_time_seconds"
        lines += [
            f"# TYPE {name} histogram",
            f'{name}_bucket{{engine="0",le="+Inf",model_name="test"}} {float(state.requests)}',
            f"{name}_count{label} {float(state.requests)}",
            f"{name}_sum{label} {total}",
        ]
    return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")


async def tokenize(request: web.Request) -> web.Response:
    body = await request.json()
    count = len(body["prompt"].split()) + 1
    return web.json_response({"count": count, "max_model_len": 65536, "tokens": []})


async def tokenize_as_list(request: web.Request) -> web.Response:
    """A /tokenize that answers a JSON list, not vLLM's object (a proxy or another server)."""
    return web.json_response([1, 2, 3])


def build_app(with_tokenize: bool, tokenize_list: bool = False) -> web.Application:
    app = web.Application()
    app["state"] = State()
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/metrics", metrics)
    app.router.add_get(
        "/v1/models", lambda r: web.json_response({"data": [{"id": "test-model?itl_ms=1"}]})
    )
    app.router.add_get("/version", lambda r: web.json_response({"version": "0.32.0"}))
    app.router.add_get(
        "/_tokens", lambda r: web.json_response({"tokens": r.app["state"].tokens_written})
    )
    app.router.add_get("/_seen", lambda r: web.json_response({"auth": r.app["state"].last_auth}))
    if with_tokenize:
        app.router.add_post("/tokenize", tokenize)
    elif tokenize_list:
        app.router.add_post("/tokenize", tokenize_as_list)
    return app


async def serve(with_tokenize: bool, tokenize_list: bool = False) -> None:
    runner = web.AppRunner(build_app(with_tokenize, tokenize_list), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(port, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenize", action="store_true")
    parser.add_argument("--tokenize-list", action="store_true", help="/tokenize answers a list")
    arguments = parser.parse_args()
    try:
        asyncio.run(serve(arguments.tokenize, arguments.tokenize_list))
    except KeyboardInterrupt:
        sys.exit(0)
