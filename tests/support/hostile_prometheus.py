"""A Prometheus API that misbehaves on purpose (a real HTTP process on 127.0.0.1).

Every POST (/api/v1/query, /api/v1/query_range) gets the mode's answer:
  trickle     a success answer's first bytes, one byte every 2 s, forever
  endless     a vector answer whose result list never ends, as fast as it is read
  gzip-bomb   Content-Encoding: gzip, ~0.5 MiB compressed, 512 MiB of JSON whitespace inside
  many        a well-formed vector of 100,000 hosts (one gpu_count series each)
  labels      two hosts: label values with ESC and newlines, values 1e308, NaN, +Inf, -5
  shape       a success answer whose result is an object, not a list

Run: python tests/support/hostile_prometheus.py MODE  (prints the port on stdout)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import zlib

from aiohttp import web

VECTOR_HEAD = b'{"status":"success","data":{"resultType":"vector","result":['
MANY_HOSTS = 100_000
FORGED_HOST = "evil\x1b[2J\x1b[31mbox\nforged-row  up, unit active"


def _sample(host: str, column: str, value: str, **labels: str) -> dict[str, object]:
    metric = {"servedeck_host": host, "servedeck_column": column, **labels}
    return {"metric": metric, "value": [1700000000.0, value]}


def labels_answer() -> bytes:
    """Hostile label values and absurd figures (what `fleet` must show escaped, or n/a)."""
    samples = [
        _sample(FORGED_HOST, "up", "1", job="dcgm\x1b]0;title\x07"),
        _sample(FORGED_HOST, "unit_state", "1", state="active\x1b[2K\rfailed"),
        _sample(FORGED_HOST, "alert", "1", alert="Hot\nGPU"),
        _sample(FORGED_HOST, "gpu_count", "8"),
        _sample(FORGED_HOST, "gpu_mem_used_mib", "1e308"),
        _sample(FORGED_HOST, "gpu_mem_total_mib", "1e308"),
        _sample(FORGED_HOST, "power_w", "+Inf"),
        _sample(FORGED_HOST, "temp_c_max", "NaN"),
        _sample(FORGED_HOST, "kv_pct", "-5"),
        _sample("plain-box", "up", "1", job="dcgm"),
        _sample("plain-box", "gpu_count", "4"),
        _sample("plain-box", "power_w", "2000000"),  # 2 MW on one host
        _sample("plain-box", "gen_tok_s", "-Inf"),
    ]
    return json.dumps(
        {"status": "success", "data": {"resultType": "vector", "result": samples}}
    ).encode()


def many_answer() -> bytes:
    items = (
        json.dumps(_sample(f"h{index:06d}", "gpu_count", "8")).encode()
        for index in range(MANY_HOSTS)
    )
    return VECTOR_HEAD + b",".join(items) + b"]}}"


def gzip_bomb(inflated_mib: int = 512) -> bytes:
    pack = zlib.compressobj(9, zlib.DEFLATED, 31)  # a gzip stream
    parts = [pack.compress(VECTOR_HEAD)]
    block = b" " * (1024 * 1024)
    parts += [pack.compress(block) for _ in range(inflated_mib)]
    parts.append(pack.compress(b"]}}") + pack.flush())
    return b"".join(parts)


async def answer(request: web.Request) -> web.StreamResponse:
    mode = request.app["mode"]
    await request.read()
    if mode == "labels":
        return web.Response(body=labels_answer(), content_type="application/json")
    if mode == "many":
        return web.Response(body=request.app["many"], content_type="application/json")
    if mode == "shape":
        body = {"status": "success", "data": {"resultType": "vector", "result": {"a": 1}}}
        return web.json_response(body)
    headers = {"Content-Type": "application/json"}
    if mode == "gzip-bomb":
        bomb = request.app["bomb"]
        headers |= {"Content-Encoding": "gzip", "Content-Length": str(len(bomb))}
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        await response.write(bomb)
        return response
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    try:
        await _misbehave(mode, response)
    except ConnectionError:
        pass  # the client gave up: what it should do
    return response


async def _misbehave(mode: str, response: web.StreamResponse) -> None:
    if mode == "trickle":
        for byte in VECTOR_HEAD:
            await response.write(bytes([byte]))
            await asyncio.sleep(2)
    if mode == "endless":
        await response.write(VECTOR_HEAD)
        chunk = b",".join([json.dumps(_sample("h", "gpu_count", "8")).encode()] * 1000) + b","
        while True:
            await response.write(chunk)
    await asyncio.sleep(3600)


async def serve(mode: str) -> None:
    app = web.Application()
    app["mode"] = mode
    app["many"] = many_answer() if mode == "many" else b""
    app["bomb"] = gzip_bomb() if mode == "gzip-bomb" else b""
    app.router.add_post("/api/v1/query", answer)
    app.router.add_post("/api/v1/query_range", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(port, flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "mode", choices=("trickle", "endless", "gzip-bomb", "many", "labels", "shape")
    )
    asyncio.run(serve(parser.parse_args().mode))


if __name__ == "__main__":
    sys.exit(main())
