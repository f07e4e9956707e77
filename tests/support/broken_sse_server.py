"""An OpenAI-style streaming server that misbehaves on purpose (a real HTTP process).

Every request streams like vLLM (tokens, a usage chunk, [DONE]) except those the
mode breaks; with `--every N` only every Nth completion request is broken.
Also /health (200) and /metrics whose gauges are NaN and +/-Inf.
Modes:
  int, null, string, list    one `data:` chunk that is JSON but not an object
  usage-int, usage-list      a usage field that is not an object
  choices-int                a `choices` field that is not an array
  deep                       a chunk nested 100000 levels deep
  keepalive                  only SSE comments (`: keep-alive`), forever
  hang                       the headers, then nothing, forever
  echo-key                   HTTP 401 whose body echoes the bare API key
  huge                       one `data:` line that never ends, in 1 KiB pieces (8 MiB)

Run: python tests/support/broken_sse_server.py MODE [--every N]  (prints the port on stdout)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys

from aiohttp import web

_TOKEN = {"id": "c", "object": "text_completion", "model": "m", "choices": [{"text": "t"}]}
_USAGE = {"id": "c", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4}}
_BAD = {
    "int": b"123",
    "null": b"null",
    "string": b'"text"',
    "list": b"[1, 2]",
    "usage-int": json.dumps({"choices": [], "usage": 7}).encode(),
    "usage-list": json.dumps({"choices": [], "usage": [1, 2]}).encode(),
    "choices-int": json.dumps({"choices": 5}).encode(),
    "deep": b"[" * 100_000 + b"]" * 100_000,
}


# Prometheus allows NaN and +/-Inf sample values; a gauge may really report them.
_NAN_METRICS = (
    "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running NaN\n"
    "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting +Inf\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc -Inf\n"
    "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total NaN\n"
)


def _event(data: bytes) -> bytes:
    return b"data: " + data + b"\n\n"


async def completions(request: web.Request) -> web.StreamResponse:
    app = request.app
    number = next(app["counter"])
    mode, every = app["mode"], app["every"]
    broken = number % every == 0
    if broken and mode == "echo-key":
        token = request.headers.get("Authorization", "").split(" ")[-1]
        return web.json_response({"error": {"message": f"rejected {token} here"}}, status=401)
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    if broken and mode == "hang":
        await asyncio.sleep(3600)
    if broken and mode == "huge":
        await response.write(b"data: ")
        for _ in range(8 * 1024):
            await response.write(b"7" * 1024)
        await asyncio.sleep(3600)
    if broken and mode == "keepalive":
        while True:
            await response.write(b": keep-alive\n\n")
            await asyncio.sleep(0.2)
    for index in range(4):
        if broken and index == 2 and mode in _BAD:
            await response.write(_event(_BAD[mode]))
        await response.write(_event(json.dumps(_TOKEN).encode()))
    await response.write(_event(json.dumps(_USAGE).encode()) + _event(b"[DONE]"))
    await response.write_eof()
    return response


def build_app(mode: str, every: int) -> web.Application:
    app = web.Application()
    app["mode"], app["every"], app["counter"] = mode, max(1, every), itertools.count(1)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/v1/models", lambda r: web.json_response({"data": [{"id": "m"}]}))
    app.router.add_get("/health", lambda r: web.Response(text=""))
    app.router.add_get("/metrics", lambda r: web.Response(text=_NAN_METRICS))
    return app


async def serve(mode: str, every: int) -> None:
    runner = web.AppRunner(build_app(mode, every), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--every", type=int, default=1)
    arguments = parser.parse_args()
    try:
        asyncio.run(serve(arguments.mode, arguments.every))
    except KeyboardInterrupt:
        sys.exit(0)
