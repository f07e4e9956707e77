"""The simulator's own ceiling: tokens/s it streams over loopback, and its CPU cost.

Runs a SimBox with near-zero decode time, opens N concurrent streaming
completions with aiohttp (the fastest client measured, docs/DESIGN.md section 4),
counts token chunks, and reads the server process's CPU seconds from /proc.
Client and server share the machine, so the figure is a floor for the server.

    python tests/perf/sim_capacity.py [--streams 256] [--tokens 400] [--step-s 0.001]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tui.sim.box import SimBox, SimServerOptions


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_stream(session: aiohttp.ClientSession, url: str, tokens: int) -> int:
    payload = {
        "prompt": "abcd" * 32,
        "max_tokens": tokens,
        "stream": True,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    count = 0
    async with session.post(url, json=payload) as response:
        async for line in response.content:
            if line.startswith(b"data: {") and b'"choices":[]' not in line:
                count += 1
    return count


async def drive(base_url: str, streams: int, tokens: int) -> tuple[int, float]:
    connector = aiohttp.TCPConnector(limit=streams)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        url = base_url + "/v1/completions"
        await one_stream(session, url, 4)  # warm up
        started = time.perf_counter()
        counts = await asyncio.gather(*(one_stream(session, url, tokens) for _ in range(streams)))
        return sum(counts), time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--step-s", type=float, default=0.001)
    args = parser.parse_args()
    options = SimServerOptions(
        shards=4,
        decode_step_s=args.step_s,
        decode_alpha=0.0,
        max_batch=max(args.streams, 1),
        prefill_tok_s=1e7,
    )
    with SimBox(load_seconds=1.0, options=options) as box:
        box.start()
        if box.wait_until_active(60) != "active":
            print("simulator did not become active", file=sys.stderr)
            return 1
        pid = box.unit.main_pid
        cpu_before = cpu_seconds(pid)
        client_before = time.process_time()
        tokens, elapsed = asyncio.run(drive(box.base_url, args.streams, args.tokens))
        cpu_used = cpu_seconds(pid) - cpu_before
        client_used = time.process_time() - client_before
    print(f"streams={args.streams} tokens/stream={args.tokens} step_s={args.step_s}")
    print(f"tokens streamed: {tokens} in {elapsed:.2f} s = {tokens / elapsed:,.0f} tok/s")
    print(
        f"server CPU: {cpu_used:.2f} s = {cpu_used / elapsed:.0%} of one core, "
        f"{1e6 * cpu_used / max(tokens, 1):.1f} us per token"
    )
    print(
        f"client CPU: {client_used:.2f} s ({1e6 * client_used / max(tokens, 1):.1f} us per token)"
    )
    print(f"machine: {os.cpu_count()} CPUs (client and server share them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
