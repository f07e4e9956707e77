"""The benchmark client's own ceiling: output tok/s it can parse, and CPU per 1,000 tokens.

Against a fast loopback SSE server (tests/support/sse_server.py with no delays, one
process), for 256 and 512 concurrent streams, for each transport considered:
httpx's default transport, httpx over httpx-aiohttp (servedeck's choice), and
raw aiohttp with the same SSE fast path. The client's CPU seconds are its
own process's (the server is another process), so they hold even when the
server, not the client, is the bottleneck on a small machine.

Run: python tests/perf/bench_client.py [--streams 256 512] [--tokens 256] [--waves 2]

Measured on a shared 2-core x86_64 box (server and client on the same cores,
256 output tokens, 2 waves), client CPU per 1,000 tokens:
httpx default 0.135-0.151 s (~6k tok/s), httpx-aiohttp 0.0065-0.0068 s
(105-149k tok/s), raw aiohttp 0.0050 s (123-177k tok/s). httpx-aiohttp keeps
httpx's API at ~150k tok/s per core; above 256 streams the runner adds
processes (tui.bench.runner.STREAMS_PER_PROCESS).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tui.bench.client import make_client  # noqa: E402
from tui.bench.loadgen import LevelRun, run_level  # noqa: E402
from tui.bench.workload import BenchSpec, request_payload  # noqa: E402


async def _raw_aiohttp(url: str, spec: BenchSpec, streams: int, count: int) -> int:
    """Raw aiohttp with the same split-on-blank-line parse; returns tokens parsed."""
    tokens = 0
    slots = asyncio.Semaphore(streams)
    connector = aiohttp.TCPConnector(limit=streams + 4)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one() -> None:
            nonlocal tokens
            async with slots:
                payload = request_payload(spec, "hello world")
                async with session.post(url, json=payload) as response:
                    buffer = b""
                    async for chunk in response.content.iter_any():
                        buffer += chunk
                        if b"\n\n" not in buffer:
                            continue
                        *events, buffer = buffer.split(b"\n\n")
                        for event in events:
                            if event.startswith(b"data: {") and json.loads(event[6:]).get(
                                "choices"
                            ):
                                tokens += 1

        await asyncio.gather(*(one() for _ in range(count)))
    return tokens


async def _httpx(url: str, spec: BenchSpec, streams: int, count: int, transport: str) -> int:
    run = LevelRun()
    client = make_client(max_connections=streams, read_timeout_s=600, transport=transport)
    async with client:
        await run_level(
            client, url, spec, ["hello world"] * count, concurrency=streams, rate=None, seed=0,
            cancel=asyncio.Event(), run=run,
        )  # fmt: skip
    failed = [o.error for o in run.outcomes if not o.success]
    if failed:
        raise SystemExit(f"{transport}: {len(failed)} failed, e.g. {failed[0]}")
    return sum(o.chunks for o in run.outcomes)


def measure(url: str, transport: str, streams: int, tokens: int, waves: int) -> tuple[float, float]:
    spec = BenchSpec(base_url=url, model="m", output_tokens=tokens)
    target = url + "/v1/completions"
    count = streams * waves
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if transport == "aiohttp (raw)":
        parsed = asyncio.run(_raw_aiohttp(target, spec, streams, count))
    else:
        parsed = asyncio.run(_httpx(target, spec, streams, count, transport))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if parsed != count * tokens:
        raise SystemExit(f"{transport}: parsed {parsed} tokens, expected {count * tokens}")
    return parsed / wall, cpu / parsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--waves", type=int, default=2)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "sse_server.py")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}"
        print(f"{'transport':<16} {'streams':>7} {'tok/s parsed':>13} {'client CPU s/1k tok':>20}")
        for streams in args.streams:
            for transport in ("httpx", "httpx-aiohttp", "aiohttp (raw)"):
                tok_s, cpu = measure(url, transport, streams, args.tokens, args.waves)
                print(f"{transport:<16} {streams:>7} {tok_s:>13,.0f} {cpu:>20.4f}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
